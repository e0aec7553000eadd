"""The answer to "may this command run here?", from either guard, without running it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from corral.errors import PolicyDenied

__all__ = ["Guard", "Verdict"]

Guard = Literal["analysis", "uri_policy"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """Whether a command may run, and when not, which guard refused it and why.

    ``rule`` is a stable identifier: an analysis rule (``blocked_binary``, ``eval``…) or a
    URI-policy rule (``rights``, ``uncovered``, ``protected``, ``dynamic_path``,
    ``cwd_not_directory``, ``other_plane``, ``host_grant``…). ``word`` is the offending word
    as written; ``path`` the absolute path it was judged as, when there is one.
    """

    allowed: bool
    guard: Guard | None = None
    rule: str | None = None
    detail: str = ""
    word: str | None = None
    path: str | None = None
    cwd: str | None = None
    plane: Literal["app", "host"] = "app"
    confinement: str | None = None

    @classmethod
    def ok(cls, *, cwd: str, plane: Literal["app", "host"], confinement: str | None) -> Verdict:
        return cls(allowed=True, detail="allowed", cwd=cwd, plane=plane, confinement=confinement)

    def to_json(self) -> dict[str, Any]:
        return {
            "allowed": self.allowed,
            "guard": self.guard,
            "rule": self.rule,
            "detail": self.detail,
            "word": self.word,
            "path": self.path,
            "cwd": self.cwd,
            "plane": self.plane,
            "confinement": self.confinement,
        }

    def error(self) -> PolicyDenied:
        """The refusal as the pipeline's error (only for a refused verdict)."""
        if self.allowed:
            raise ValueError("error() called on an allowed verdict")
        guard = "command analysis" if self.guard == "analysis" else "URI policy"
        return PolicyDenied(
            f"refused by {guard} (rule {self.rule!r}): {self.detail}",
            data={
                "guard": self.guard,
                "rule": self.rule,
                "word": self.word,
                "path": self.path,
            },
        )
