"""Tables of connections: encrypted provider credentials, connected MCP servers and git
remotes.

A credential row holds only Fernet ciphertext; the key lives in the data folder's private
area, never in the database, so a copy of the database alone reveals no value. A
credential belongs to one user (``scope = "user"``) or to the whole project
(``scope = "project"``, ``owner_id = ""``), which only administrators write.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from corral.store.tables import Base, utcnow

__all__ = ["Credential", "GitRemote", "McpServer"]


class Credential(Base):
    __tablename__ = "credentials"
    scope: Mapped[str] = mapped_column(String(16), primary_key=True)
    owner_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    """The owning user's id, or ``""`` for a project credential."""
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    provider: Mapped[str] = mapped_column(String(64), default="")
    ciphertext: Mapped[str] = mapped_column(Text)
    created_by: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    inject_hosts: Mapped[list[str]] = mapped_column(JSON, default=list)
    """Hosts the egress proxy may send the value to; empty: never injected."""
    inject_as: Mapped[str] = mapped_column(String(16), default="")
    """``header``, ``query`` or ``basic`` (with hosts)."""
    inject_field: Mapped[str] = mapped_column(String(128), default="")
    """The header or query parameter name, when not the default."""


class McpServer(Base):
    __tablename__ = "mcp_servers"
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    transport: Mapped[str] = mapped_column(String(16))
    command: Mapped[list[str]] = mapped_column(JSON)
    """The program and its arguments (stdio)."""
    fields: Mapped[dict[str, Any]] = mapped_column(JSON)
    trusted: Mapped[bool] = mapped_column(Boolean, default=False)
    """Whether the server's readOnlyHint / destructiveHint are believed."""
    created_by: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class GitRemote(Base):
    """A named git remote the platform configured in a repository of the project drive."""

    __tablename__ = "git_remotes"
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    """The connection's name, which is also the remote's name in the repository."""
    repo: Mapped[str] = mapped_column(Text)
    """The repository's folder as a drive URI (``data://…``)."""
    url: Mapped[str] = mapped_column(Text)
    credential: Mapped[str] = mapped_column(String(64), default="")
    """The name of the stored credential the credential helper hands git, or ``""``."""
    created_by: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
