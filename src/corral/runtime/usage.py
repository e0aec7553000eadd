"""Model use that tools spend on a conversation's behalf, recorded in the platform log.

Implements :class:`corral.service_protocols.UsageRecorder` (``ctx.services.usage``); the
loop's own model turns carry their usage on their ``model_turn`` rows.
"""

from __future__ import annotations

from corral.kernel.logs import LogStore
from corral.service_protocols import UsageRecord

__all__ = ["UsageLog"]


class UsageLog:
    def __init__(self, logs: LogStore) -> None:
        self._logs = logs

    async def record(self, usage: UsageRecord) -> None:
        await self._logs.write(
            "usage",
            {
                "source": usage.source,
                "model": usage.model,
                "user_id": usage.user_id,
                "conversation_id": usage.conversation_id,
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "requests": usage.requests,
                "fee_usd": usage.fee_usd,
                "details": dict(usage.details),
            },
            run_id=usage.run_id,
        )
