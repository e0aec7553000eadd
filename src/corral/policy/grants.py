"""Feature grants: roles grant sets of feature ids; tools and arguments require them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["BUILTIN_ROLES", "KNOWN_FEATURES", "Grants", "validate_feature_pattern"]

KNOWN_FEATURES: dict[str, str] = {
    "core.web": "web_search and web_fetch",
    "core.exec": "execute in the application sandbox",
    "exec.host": "execute on the host plane through the operator's broker",
    "drive.read": "read, list and search files with the drive tools (fs_read, fs_list, fs_search)",
    "drive.write": "store files in the project drive (fs_write, fs_edit, web_fetch save_to)",
    "workflow.read": "read workflows and their runs",
    "workflow.write": "create and change workflows",
    "workflow.dispatch": "start workflow runs",
    "workflow.manage": "change, cancel and delete workflows other users own",
    "delegate.run": "start subagents",
    "mcp.connect": "connect MCP servers",
    "channels.connect": "connect messaging channels",
    "git.connect": "connect git remotes",
    "credentials.self": "store one's own provider credentials",
    "sources.read": "list and read registered sources",
    "sources.mount": "register new sources",
    "admin.users": "manage users, roles and tokens",
    "admin.settings": "change live settings",
    "conversations.manage": "read and write conversations of other users",
}

_MEMBER = (
    "core.web",
    "core.exec",
    "drive.read",
    "drive.write",
    "workflow.read",
    "workflow.dispatch",
    "delegate.run",
    "credentials.self",
    "sources.read",
)

BUILTIN_ROLES: dict[str, tuple[str, ...]] = {
    "owner": ("*",),
    "admin": tuple(KNOWN_FEATURES),
    "member": _MEMBER,
}


def validate_feature_pattern(pattern: str) -> str:
    """A grant is ``*``, ``prefix.*`` or a dotted feature id; returns it or raises ValueError."""
    if pattern == "*":
        return pattern
    parts = pattern.split(".")
    if len(parts) < 2 or not all(parts):
        raise ValueError(
            f"feature {pattern!r} is not a dotted id such as 'core.web' or a 'prefix.*' pattern"
        )
    body = parts[:-1] if parts[-1] == "*" else parts
    if not all(p.replace("_", "").replace("-", "").isalnum() for p in body):
        raise ValueError(f"feature {pattern!r} may hold letters, digits, '_' and '-' only")
    return pattern


@dataclass(frozen=True, slots=True)
class Grants:
    """The feature patterns a caller holds."""

    patterns: frozenset[str]

    @classmethod
    def of(cls, patterns: Iterable[str]) -> Grants:
        return cls(frozenset(patterns))

    def has(self, feature: str) -> bool:
        if "*" in self.patterns or feature in self.patterns:
            return True
        prefix = feature
        while "." in prefix:
            prefix = prefix.rsplit(".", 1)[0]
            if f"{prefix}.*" in self.patterns:
                return True
        return False

    def missing(self, features: Iterable[str]) -> list[str]:
        return [f for f in features if not self.has(f)]
