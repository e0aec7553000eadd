"""Which files the model has seen in a conversation, from the conversation's own rows.

fs_write refuses to replace a file the model has not read. The answer comes from durable
state, so it survives a restart and holds for every process sharing the store: the latest
successful ``fs_read``, ``fs_write`` or ``fs_edit`` result row of the conversation whose
data names the same real path. That row also holds the file's modification stamp as the
model saw it, so a file changed since (by a person, a command, another agent) reads as
unseen again. No table of its own: the ``(conversation_id, seq)`` index finds the rows.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.store.runtime_tables import ConversationRow

__all__ = ["SEEING_TOOLS", "ReadLog"]

SEEING_TOOLS = ("fs_read", "fs_write", "fs_edit")
"""Tools whose successful result may record that the model knows a file's current state
(fs_edit only does when the model had seen the file before the edit)."""


class ReadLog:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def last_seen(self, conversation_id: str, path: str) -> int | None:
        """The modification stamp (ns) of ``path`` when the model last saw it here, or None
        when it never did."""
        data = ConversationRow.data
        stamp = data[("result", "data", "mtime_ns")].as_integer()
        query = (
            select(stamp)
            .where(
                ConversationRow.conversation_id == conversation_id,
                ConversationRow.kind == "tool_result",
                data["tool"].as_string().in_(SEEING_TOOLS),
                data[("result", "data", "path")].as_string() == path,
                data[("result", "is_error")].as_boolean().is_not(True),
                stamp.is_not(None),
            )
            .order_by(ConversationRow.seq.desc())
            .limit(1)
        )
        async with self._sessions() as session:
            found = (await session.execute(query)).first()
        return None if found is None else int(found[0])
