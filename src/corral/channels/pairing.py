"""Pairing: an unknown sender's expiring code, decided by the connection's owner.

The owner (or an administrator) approves a code, mapping the sender to a platform user —
themselves, or (administrators only) another user — or rejects it. An expired code cannot
be approved; the sender gets a new one the next time they write.
"""

from __future__ import annotations

from corral.channels.relay import Chat, Relay
from corral.channels.store import ChannelStore, ConnectionRecord, SenderRecord
from corral.errors import NotFound, Refusal, UsageError
from corral.kernel import Kernel
from corral.policy.identity import Caller
from corral.store.tables import utcnow

__all__ = ["ADMIN", "Pairing"]

ADMIN = "admin.settings"


class Pairing:
    """Lists and decides the pairing codes of channels."""

    def __init__(self, kernel: Kernel, store: ChannelStore, relay: Relay) -> None:
        self.kernel = kernel
        self.store = store
        self.relay = relay

    def _may_manage(self, caller: Caller, connection: ConnectionRecord) -> bool:
        return connection.owner_id == caller.user_id or caller.grants.has(ADMIN)

    async def pairings(
        self, caller: Caller, *, status: str | None = "pending"
    ) -> list[SenderRecord]:
        """Senders on the connections ``caller`` owns (all connections for admins)."""
        mine = [c.name for c in await self.store.connections() if self._may_manage(caller, c)]
        return await self.store.senders(status=status, connections=mine)

    async def _pending_by_code(
        self, code: str, caller: Caller
    ) -> tuple[SenderRecord, ConnectionRecord]:
        sender = await self.store.by_code(code)
        connection = await self.store.connection(sender.connection) if sender else None
        if sender is None or connection is None or not self._may_manage(caller, connection):
            raise NotFound(
                f"no pending pairing with code {code!r} on a channel you own; "
                "`corral channels pairing list` shows them"
            )
        return sender, connection

    async def approve(self, code: str, caller: Caller, *, user: str | None = None) -> SenderRecord:
        """Approve a pairing code, mapping the sender to ``user`` (default: the caller)."""
        sender, connection = await self._pending_by_code(code, caller)
        if sender.code_expires_at <= utcnow():
            raise UsageError(
                f"pairing code {code!r} has expired; the sender gets a new one when they write "
                "again (live setting channels_pairing_code_ttl_s)"
            )
        target = await self.kernel.caller(user) if user is not None else caller
        if target.user_id != caller.user_id and not caller.grants.has(ADMIN):
            raise Refusal(
                f"mapping a sender to another user ({target.name!r}) needs feature {ADMIN!r}",
                code="feature_missing",
            )
        if not await self.store.decide(
            sender.id, "approved", by=caller.user_id, user_id=target.user_id
        ):
            raise UsageError(f"pairing code {code!r} was decided meanwhile")
        chat = Chat(connection=connection.name, chat_id=sender.chat_id, thread=sender.thread)
        self.relay.say(chat, f"Paired: your messages now reach the agent as {target.name}.")
        found = await self.store.sender(connection.name, sender.sender_id, sender.chat_id)
        assert found is not None
        return found

    async def reject(self, code: str, caller: Caller) -> SenderRecord:
        sender, connection = await self._pending_by_code(code, caller)
        if not await self.store.decide(sender.id, "rejected", by=caller.user_id):
            raise UsageError(f"pairing code {code!r} was decided meanwhile")
        found = await self.store.sender(connection.name, sender.sender_id, sender.chat_id)
        assert found is not None
        return found
