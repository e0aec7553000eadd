"""An immutable table by path whose next version costs what changed, not the whole table.

A snapshot's tables (entries, digests) are values: an old snapshot never changes, as rewind
and calls overlapping on a source rely on. Copying them whole for each call's change set
made its cost grow with the source; a :class:`Layered` instead shares a base dict with the
versions before it and holds the paths changed since in an overlay, which a new version
copies (it holds the paths changed since the last compaction, usually the few a
conversation keeps editing). The overlay is folded into a new base once it outgrows
:func:`_limit`, so a lookup stays two dict probes and the copies stay bounded.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TypeVar

V = TypeVar("V")

MIN_OVERLAY = 256


def _limit(base: int) -> int:
    """Paths the overlay may hold before it is folded into a new base: a fold costs the
    whole table, so it waits until it is a sixteenth of it (or a few hundred paths)."""
    return max(MIN_OVERLAY, base // 16)


class Layered(Mapping[str, V]):
    """A read-only mapping: ``base`` (never changed once given) overlaid with changes, a
    None value meaning the path is gone. Build the next version with :meth:`changed`."""

    __slots__ = ("_base", "_len", "_over")

    def __init__(
        self, base: dict[str, V], over: dict[str, V | None] | None = None, length: int = -1
    ) -> None:
        self._base = base
        self._over: dict[str, V | None] = over or {}
        if length < 0:
            length = len(base) + sum(
                (value is not None) - (path in base) for path, value in self._over.items()
            )
        self._len = length

    @classmethod
    def of(cls, table: Mapping[str, V]) -> Layered[V]:
        """``table`` as a layered one (a dict is taken over as the base, not copied: its
        maker must not change it afterwards)."""
        if isinstance(table, Layered):
            return table
        return cls(table if isinstance(table, dict) else dict(table))

    def changed(self, changes: Mapping[str, V | None]) -> Layered[V]:
        """The next version: ``changes`` applied (None removes a path); this one is left
        as it is. Costs the changes and the overlay, or the whole table when it folds."""
        if not changes:
            return self
        length = self._len
        for path, value in changes.items():
            length += (value is not None) - (path in self)
        over = {**self._over, **changes}
        if len(over) <= _limit(len(self._base)):
            return Layered(self._base, over, length)
        base = {path: value for path, value in self._base.items() if path not in over}
        base.update((path, value) for path, value in over.items() if value is not None)
        return Layered(base, None, length)

    def __getitem__(self, path: str) -> V:
        over = self._over
        if path in over:
            value = over[path]
            if value is None:
                raise KeyError(path)
            return value
        return self._base[path]

    def get(self, path: str, default: V | None = None) -> V | None:  # type: ignore[override]
        over = self._over
        if path in over:
            value = over[path]
            return default if value is None else value
        return self._base.get(path, default)

    def __contains__(self, path: object) -> bool:
        over = self._over
        if path in over:
            return over[path] is not None
        return path in self._base

    def __iter__(self) -> Iterator[str]:
        over = self._over
        for path in self._base:
            if path not in over:
                yield path
        for path, value in over.items():
            if value is not None:
                yield path

    def __len__(self) -> int:
        return self._len

    def __repr__(self) -> str:
        return f"Layered({dict(self.items())!r})"
