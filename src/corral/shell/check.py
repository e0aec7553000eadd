"""Both command guards as one verdict: analysis first, then the URI-policy gate.

Used by the ``execute`` policy hook (so a refusal happens before any approval is asked),
again by the handler just before spawning (rights may have changed while an approval
waited), by ``Platform.check_command`` and by ``corral check-command``. Nothing runs.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING

from corral.errors import PolicyDenied
from corral.policy.identity import Caller
from corral.policy.sources import SourceDef, SourcePolicy
from corral.settings import Settings
from corral.shell.gate import UriGate
from corral.shell.plane import Plane, choose_plane
from corral.shell.sandbox import SANDBOX_HOME
from corral.shell.step_spans import note_verdict, step_span
from corral.shell.verdict import Verdict

if TYPE_CHECKING:
    # Only for hints: the analyser's tables load with the first command analysed.
    from corral.shell.analysis import Analysis

__all__ = [
    "HOST_CONFINEMENT",
    "UNCONFINED_HOME_PREFIX",
    "CheckedCommand",
    "check_command",
    "platform_protected",
    "unconfined_home",
]

HOST_CONFINEMENT = "host-broker"
HOST_FEATURE = "exec.host"
UNCONFINED_HOME_PREFIX = "corral-home-"
"""Unconfined commands get a fresh HOME ``<tmp>/corral-home-XXXXXXXX`` (made per command)."""


def unconfined_home() -> str:
    """The HOME an unconfined command gets, as far as it is known before it is made.

    The folder's own name is random, but it always lies directly in the temporary folder, so
    every path that climbs out of it (``~/../x``) resolves exactly; paths inside it lie in no
    source and are refused like any uncovered path.
    """
    return os.path.join(tempfile.gettempdir(), UNCONFINED_HOME_PREFIX + "XXXXXXXX")


def platform_protected(settings: Settings) -> list[str]:
    """The platform's own files: never reachable by a command, whatever a source covers."""
    return [str(p) for p in settings.protected_paths()]


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckedCommand:
    """A verdict and what it was reached on, for the runner to use when it is allowed."""

    verdict: Verdict
    plane: Plane
    cwd: str | None = None
    source: SourceDef | None = None
    analysis: Analysis | None = None


def _denied(error: PolicyDenied, *, word: str | None, plane: Plane, conf: str | None) -> Verdict:
    return Verdict(
        allowed=False,
        guard="uri_policy",
        rule=str(error.data.get("rule") or "denied"),
        detail=error.message,
        word=word,
        path=error.data.get("path"),
        plane=plane,
        confinement=conf,
    )


def check_command(
    command: str,
    *,
    cwd: str | None,
    caller: Caller,
    policy: SourcePolicy,
    settings: Settings,
    confinement: str,
) -> CheckedCommand:
    """Judge ``command`` started in ``cwd`` by ``caller``; pure apart from reading the disk."""
    word = cwd or "data root"
    try:
        choice = choose_plane(policy, cwd)
    except PolicyDenied as error:
        return CheckedCommand(
            verdict=_denied(error, word=word, plane="app", conf=confinement), plane="app"
        )
    plane = choice.plane
    label = confinement if plane == "app" else HOST_CONFINEMENT
    resolved = choice.resolved
    if plane == "host" and not caller.grants.has(HOST_FEATURE):
        verdict = Verdict(
            allowed=False,
            guard="uri_policy",
            rule="host_grant",
            detail=f"cwd {word!r} is on the host plane, which needs feature {HOST_FEATURE!r}; "
            f"role {caller.role!r} lacks it. Run the command in a local source instead.",
            word=word,
            path=str(resolved.path),
            plane=plane,
            confinement=label,
        )
        return CheckedCommand(verdict=verdict, plane=plane)
    try:
        policy.require(caller, resolved, "exec")
    except PolicyDenied as error:
        return CheckedCommand(
            verdict=_denied(error, word=word, plane=plane, conf=label), plane=plane
        )
    cwd_path = str(resolved.path)
    if not os.path.isdir(cwd_path):
        verdict = Verdict(
            allowed=False,
            guard="uri_policy",
            rule="cwd_not_directory",
            detail=f"cwd {word!r} (resolves to {cwd_path!r}) is not an existing folder",
            word=word,
            path=cwd_path,
            plane=plane,
            confinement=label,
        )
        return CheckedCommand(verdict=verdict, plane=plane)
    # Under either kernel tier the kernel enforces the same rights the gate checks.
    sandboxed = plane == "app" and confinement in ("bubblewrap", "landlock")
    if plane != "app":
        home = None
    elif confinement == "bubblewrap":
        home = SANDBOX_HOME
    else:  # landlock and unconfined: a real temporary HOME, climbed out of exactly
        home = unconfined_home()
    from corral.shell.analysis import analyze

    with step_span("analysis") as span:
        analysis = analyze(
            command,
            protected_paths=platform_protected(settings),
            home=home,
            cwd=cwd_path,
            unconfined=not sandboxed,
            allowed_invocations=settings.unconfined_allowed_commands,
        )
        if span is not None:
            refusal = Verdict(allowed=False, guard="analysis", rule=analysis.rule)
            note_verdict(span, None if analysis.allowed else refusal)
    if not analysis.allowed:
        verdict = Verdict(
            allowed=False,
            guard="analysis",
            rule=analysis.rule,
            detail=analysis.detail,
            word=analysis.word,
            cwd=cwd_path,
            plane=plane,
            confinement=label,
        )
        return CheckedCommand(
            verdict=verdict, plane=plane, cwd=cwd_path, source=resolved.source, analysis=analysis
        )
    gate = UriGate(
        policy=policy,
        caller=caller,
        plane=plane,
        sandboxed=sandboxed,
        data_dir=os.path.realpath(settings.data_dir),
        confinement=label,
    )
    with step_span("gate") as span:
        refused = gate.check(analysis, cwd_path)
        note_verdict(span, refused)
    if refused is not None:
        verdict = dataclasses.replace(refused, cwd=cwd_path)
    else:
        verdict = Verdict.ok(cwd=cwd_path, plane=plane, confinement=label)
    return CheckedCommand(
        verdict=verdict, plane=plane, cwd=cwd_path, source=resolved.source, analysis=analysis
    )
