"""Sources and URI policies: which paths a caller may read, write or execute in.

A *source* is a named root with a connector kind (``local`` now; ``host`` and others
later) and rights granted per role or per user. A target is written as

- a source URI: ``data://notes/x.md`` (the source name is case-insensitive),
- an absolute path: ``/usr/bin/python3``,
- a path relative to a base folder (the data root unless a cwd is given).

Resolution normalises ``..`` and symlinks before matching, so a path is judged by where it
really leads. A path no source covers is denied. The platform's own files (its database,
keys, configuration) are denied even when a broad source happens to cover them.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from corral.errors import PolicyDenied
from corral.policy.identity import Caller

__all__ = [
    "ACCESS_LETTERS",
    "Access",
    "ResolvedPath",
    "SourceDef",
    "SourceGrant",
    "SourcePolicy",
    "parse_rights",
]

Access = Literal["read", "write", "exec"]
ACCESS_LETTERS: dict[str, Access] = {"r": "read", "w": "write", "x": "exec"}
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9_.+-]*)://(.*)$", re.DOTALL)


def parse_rights(text: str) -> frozenset[Access]:
    """``"rwx"``-style rights to a set; raises ValueError naming the bad letter."""
    rights: set[Access] = set()
    for letter in text.lower():
        if letter == "-":
            continue
        if letter not in ACCESS_LETTERS:
            raise ValueError(f"right {letter!r} is not one of r (read), w (write), x (exec)")
        rights.add(ACCESS_LETTERS[letter])
    return frozenset(rights)


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceGrant:
    principal_kind: Literal["role", "user"]
    principal: str  # role name, user id, or "*" for every role
    rights: frozenset[Access]

    def applies_to(self, caller: Caller) -> bool:
        if self.principal_kind == "user":
            return self.principal == caller.user_id
        return self.principal in ("*", caller.role)


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceDef:
    name: str
    connector: str
    root: Path
    grants: tuple[SourceGrant, ...] = ()
    real_root: Path = field(init=False)

    def __post_init__(self) -> None:
        try:
            real_root = Path(os.path.realpath(self.root))
        except (OSError, ValueError):
            real_root = Path(self.root)  # unresolvable: nothing will be found inside it
        object.__setattr__(self, "real_root", real_root)

    def rights_for(self, caller: Caller) -> frozenset[Access]:
        rights: set[Access] = set()
        for grant in self.grants:
            if grant.applies_to(caller):
                rights |= grant.rights
        return frozenset(rights)

    def uri_for(self, path: Path) -> str:
        relative = path.relative_to(self.real_root).as_posix()
        return f"{self.name}://" + ("" if relative == "." else relative)


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolvedPath:
    """Where a target really leads, and which source (if any) covers it."""

    target: str
    path: Path
    source: SourceDef | None
    protected: bool = False

    @property
    def uri(self) -> str:
        return self.source.uri_for(self.path) if self.source else self.path.as_posix()


def _is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


class SourcePolicy:
    """Resolves targets to sources and checks a caller's rights on them."""

    def __init__(
        self,
        sources: Iterable[SourceDef],
        *,
        data_root: Path,
        protected: Iterable[Path] = (),
        home: Path | None = None,
    ) -> None:
        self.sources: dict[str, SourceDef] = {s.name.lower(): s for s in sources}
        # Longest root first, so the most specific source owns a path.
        self._by_root = sorted(
            self.sources.values(), key=lambda s: len(str(s.real_root)), reverse=True
        )
        self.data_root = Path(os.path.realpath(data_root))
        self._protected = tuple(os.path.realpath(p).casefold() for p in protected)
        self._home = home if home is not None else Path(os.path.expanduser("~"))

    def with_sources(self, extra: Iterable[SourceDef]) -> SourcePolicy:
        """This policy with ``extra`` sources added (a call's skill folder); a name already
        registered keeps its own source."""
        clone = copy.copy(self)
        added = {s.name.lower(): s for s in extra if s.name.lower() not in self.sources}
        clone.sources = {**self.sources, **added}
        clone._by_root = sorted(
            clone.sources.values(), key=lambda s: len(str(s.real_root)), reverse=True
        )
        return clone

    def is_protected(self, real_path: str) -> bool:
        """Whether an already resolved path is one of the platform's own files."""
        folded = real_path.casefold()
        return any(_is_within(folded, p) for p in self._protected)

    def source(self, name: str) -> SourceDef | None:
        return self.sources.get(name.lower())

    def resolve(self, target: str, *, base: Path | str | None = None) -> ResolvedPath:
        """Resolve ``target`` (URI, absolute or relative path) to a real path and its source."""
        if "\x00" in target:
            raise PolicyDenied(f"path {target!r} contains a NUL byte; remove it")
        match = _SCHEME.match(target)
        if match:
            scheme, rest = match.group(1).lower(), match.group(2)
            if scheme == "file":
                raw = Path("/" + rest.lstrip("/"))
            else:
                source = self.source(scheme)
                if source is None:
                    known = ", ".join(sorted(self.sources)) or "none"
                    raise PolicyDenied(
                        f"{target!r} names no registered source {scheme!r}; known sources: {known}"
                    )
                raw = source.root / rest.lstrip("/")
        elif target == "~" or target.startswith("~/"):
            raw = self._home / target[2:]
        else:
            candidate = Path(target)
            if candidate.is_absolute():
                raw = candidate
            else:
                anchor = Path(base) if base is not None else self.data_root
                raw = anchor / candidate
        try:
            real = Path(os.path.realpath(raw))
        except (OSError, ValueError) as exc:
            # /proc/1/root and the like refuse readlink; lone surrogates cannot be encoded.
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not encodable"
            shown = target if len(target) <= 200 else target[:200] + "…"
            raise PolicyDenied(
                f"path {shown!r} cannot be resolved ({why}); use a path inside one of your sources",
                data={"rule": "unresolvable_path", "path": shown},
            ) from None
        protected = self.is_protected(str(real))
        owner = None
        real_text = str(real)
        for source in self._by_root:
            if _is_within(real_text, str(source.real_root)):
                owner = source
                break
        return ResolvedPath(target=target, path=real, source=owner, protected=protected)

    def check(
        self,
        caller: Caller,
        target: str,
        access: Access,
        *,
        base: Path | str | None = None,
    ) -> ResolvedPath:
        """Resolve ``target`` and require ``access`` on it; raise PolicyDenied otherwise."""
        resolved = self.resolve(target, base=base)
        self.require(caller, resolved, access)
        return resolved

    def require(self, caller: Caller, resolved: ResolvedPath, access: Access) -> None:
        shown = repr(resolved.target)
        if resolved.target != str(resolved.path):
            shown += f" (resolves to {str(resolved.path)!r})"
        if resolved.protected:
            raise PolicyDenied(
                f"{shown} is part of the platform's own data (database, keys or settings); "
                "no tool may touch it",
                data={"path": str(resolved.path), "access": access, "rule": "protected"},
            )
        if resolved.source is None:
            raise PolicyDenied(
                f"{shown} is not covered by any source, so it is denied; work under "
                "data:// (the project drive) or ask an administrator to register a source",
                data={"path": str(resolved.path), "access": access, "rule": "uncovered"},
            )
        rights = resolved.source.rights_for(caller)
        if access not in rights:
            held = "".join(k for k, v in ACCESS_LETTERS.items() if v in rights) or "none"
            raise PolicyDenied(
                f"{access} access to {shown} is denied: source {resolved.source.name!r} grants "
                f"you {held}; choose a path you may {access} or ask an administrator",
                data={
                    "path": str(resolved.path),
                    "source": resolved.source.name,
                    "access": access,
                    "rule": "rights",
                },
            )

    def allowed(
        self, caller: Caller, target: str, access: Access, *, base: Path | str | None = None
    ) -> bool:
        try:
            self.check(caller, target, access, base=base)
        except PolicyDenied:
            return False
        return True
