"""What the ``execute`` handler asks of the skills service, typed one floor down.

``execute`` with action ``skill`` activates a bundle (:meth:`SkillActivator.activate`);
every shell call then asks for its :class:`ShellBinding`: the substitution variables
(``SKILL_DIR``, ``SKILL_URI``, ``SESSION_ID``, ``CORRAL_API``), the secrets staged for the
child only (the active skill's declared credentials and the run's ticket), and the skill's
own folder as a read-and-exec source when it does not live in the drive.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from corral.policy.identity import Caller
from corral.policy.sources import SourceDef
from corral.tools.narrowing import Narrowing
from corral.tools.results import ToolResult

__all__ = ["ShellBinding", "SkillActivator", "SkillScope"]


class SkillScope(Protocol):
    """Whose call it is (a :class:`~corral.tools.context.CallContext` is one)."""

    @property
    def caller(self) -> Caller: ...
    @property
    def run_id(self) -> str | None: ...
    @property
    def conversation_id(self) -> str | None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ShellBinding:
    """What one shell call of a run receives from the skills it activated."""

    skill: str | None = None
    """The active skill whose substitutions bind, if any."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Plain substitution variables (shown to the model, never secret)."""
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Declared credentials and the ticket: in the child's environment, redacted elsewhere."""
    sources: tuple[SourceDef, ...] = ()
    """The skill's folder when it lies outside every source (read and exec only)."""

    def substitute(self, text: str) -> str:
        """``text`` with ``${NAME}`` of the plain variables replaced."""
        for name, value in self.env.items():
            text = text.replace("${" + name + "}", value)
        return text


class SkillActivator(Protocol):
    """Skills for ``execute``: activation, and what a shell call receives."""

    async def activate(self, name: str, ctx: SkillScope, /) -> ToolResult: ...

    async def binding(self, ctx: SkillScope, skill: str | None, /) -> ShellBinding:
        """The binding for a shell call; raises a ToolError naming an unknown ``skill``."""
        ...

    def narrowing(self, run_id: str | None, /) -> Narrowing:
        """How the skills active in ``run_id`` narrow its tools (their ``allowed-tools``)."""
        ...
