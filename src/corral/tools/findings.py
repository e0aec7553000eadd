"""What earlier steps of a call found, kept for later ones: one value per type.

The policy step of a tool may compute something its handler needs again (``execute``'s
checked command, its skill binding): it puts the value on ``ctx.findings`` and the handler
takes it back by type instead of computing it twice::

    ctx.findings.put(CheckedShellCall(...))          # in the policy hook
    found = ctx.findings.get(CheckedShellCall)       # in the handler: the value, or None

A pipeline stage reaches the same object as ``call.findings``.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["Findings"]

T = TypeVar("T")


class Findings:
    """A small typed store keyed by the value's own type (its exact class)."""

    __slots__ = ("_by_type",)

    def __init__(self) -> None:
        self._by_type: dict[type, object] = {}

    def put(self, value: object) -> None:
        """Keep ``value`` under its type, replacing an earlier value of that type."""
        self._by_type[type(value)] = value

    def get(self, kind: type[T]) -> T | None:
        """The value kept under ``kind``, or None."""
        found = self._by_type.get(kind)
        return found if isinstance(found, kind) else None

    def drop(self, kind: type) -> None:
        """Forget the value kept under ``kind`` (a stage that changed what it was found on)."""
        self._by_type.pop(kind, None)

    def __contains__(self, kind: type) -> bool:
        return kind in self._by_type
