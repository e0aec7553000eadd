"""Using the conversation's own model from web_search, metered like any other model use.

Native search and research-mode query variants both run on the model the conversation
runs on (``ctx.services.conversation_model``) and record their tokens and fees with the
usage recorder (``ctx.services.usage``). Without either there is no such step: the
caller is told why, and no other vendor's model is ever used instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from corral.service_protocols import UsageRecord, UsageRecorder

from .env import SearchEnv

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelResponse
    from pydantic_ai.models import Model

__all__ = ["ModelAccess", "model_access"]


@dataclass(frozen=True, slots=True)
class ModelAccess:
    """The conversation's model and the recorder its use is metered with."""

    spec: str
    model: Model
    recorder: UsageRecorder

    async def record(
        self,
        env: SearchEnv,
        response: ModelResponse,
        *,
        source: str,
        fee_usd: float = 0.0,
        details: dict[str, int] | None = None,
    ) -> None:
        """Record one response's tokens (and any per-use fee) against the conversation."""
        usage = response.usage
        await self.recorder.record(
            UsageRecord(
                source=source,
                model=self.spec,
                user_id=env.user_id,
                conversation_id=env.conversation_id,
                run_id=env.run_id,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                requests=1,
                fee_usd=fee_usd,
                details=details or {},
            )
        )


def _spec_of(model: Any) -> str:
    system = getattr(model, "system", None)
    name = getattr(model, "model_name", None)
    return f"{system}:{name}" if system and name else str(name or type(model).__name__)


def model_access(env: SearchEnv) -> ModelAccess | str:
    """The conversation's model with its recorder, or the reason there is none to use."""
    from pydantic_ai.models import Model

    held: Any = env.conversation_model
    if held is None:
        return "this call has no conversation model (it was not made from a conversation)"
    model = held if isinstance(held, Model) else getattr(held, "model", None)
    if not isinstance(model, Model):
        return "the conversation's model is not a pydantic-ai model this tool can use"
    spec = getattr(held, "spec", None) if not isinstance(held, Model) else None
    recorder = env.usage
    if recorder is None:
        return "no usage recorder in this context, so model use could not be metered"
    return ModelAccess(spec=str(spec or _spec_of(model)), model=model, recorder=recorder)
