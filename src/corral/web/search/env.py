"""What providers may use during one web_search call: fetcher, settings, services, clock."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pydantic import SecretStr

from corral.service_protocols import ConversationModel, CredentialLookup, UsageRecorder
from corral.settings import Settings

from .config import SearchConfig

if TYPE_CHECKING:
    from corral.web.fetch import Fetcher

__all__ = ["SearchEnv"]


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(slots=True, kw_only=True)
class SearchEnv:
    """The call's environment; providers reach the network only through :attr:`fetcher`."""

    fetcher: Fetcher
    settings: Settings
    config: SearchConfig = field(default_factory=SearchConfig)
    credentials: CredentialLookup | None = None
    """Stored provider credentials, when the platform has a store for them."""
    conversation_model: ConversationModel | None = None
    """The calling conversation's model (absent outside a conversation)."""
    usage: UsageRecorder | None = None
    """Where model use on the conversation's behalf is recorded."""
    user_id: str = ""
    conversation_id: str | None = None
    run_id: str | None = None
    clock: Callable[[], datetime] = _utc_now
    """Current time (UTC), for relative dates, freshness and the year in query variants."""
    _secrets: dict[str, str | None] = field(default_factory=dict, repr=False)

    async def secret(self, name: str, configured: SecretStr | str | None) -> str | None:
        """The caller's stored credential ``name``, else the configured setting, else None.

        Stored credentials come from the ``credentials`` service when the platform has one;
        the value is looked up once per call.
        """
        if name not in self._secrets:
            value: str | None = None
            if self.credentials is not None and self.user_id:
                value = await self.credentials.lookup(name, user_id=self.user_id)
            if not value and configured is not None:
                value = (
                    configured.get_secret_value()
                    if isinstance(configured, SecretStr)
                    else configured
                )
            self._secrets[name] = value.strip() if value and value.strip() else None
        return self._secrets[name]
