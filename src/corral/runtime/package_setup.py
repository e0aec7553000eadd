"""What a package's ``install`` hook receives and returns.

When the platform opens, every package whose handlers module defines ``install(setup)`` is
installed, in load order (entry points first, then folders) — disabled packages too, since a
package can be enabled while the platform runs::

    def install(setup: PackageSetup) -> Installed:       # or async def
        greeter = Greeter(setup.kernel.sessions)
        return Installed(services=Services(extra={Greeter: greeter}), close=[greeter.close])

A package may add stages to the dispatch pipeline, each placed before or after a built-in
stage (:mod:`corral.tools.stages`)::

    return Installed(stages=[StageContribution(Audit(), after="approval")])

A stage that cannot be placed (an unknown anchor, no name, a name already taken) leaves its
package out with an error naming it, like a failing hook. The hook may also use the
runtime's extension points (``setup.runtime.prompt.add_state_block``,
``add_overlay``, ``run_end_hooks``, ``add_background_work``). The services of all packages
are joined into the one :class:`~corral.tools.services.Services` every call receives; two
packages providing the same service is an error that leaves the later package out. Start-up
work runs after every package is installed and runs lost to a restart are recovered; closers
run, last installed first, when the platform closes.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from corral.tools.services import Services
from corral.tools.stages import StageContribution

if TYPE_CHECKING:
    from corral.kernel import Kernel
    from corral.runtime.runtime import Runtime

__all__ = ["InstallHook", "Installed", "PackageSetup", "run_install_hook"]

Work = Callable[[], Awaitable[None]]


@dataclass(frozen=True, slots=True, kw_only=True)
class PackageSetup:
    """Handed to a package's install hook."""

    package: str
    """The name of the package being installed."""
    kernel: Kernel
    """Store sessions, settings, configuration, identity, approvals, logs, the dispatcher."""
    runtime: Runtime
    """Conversations and runs, and the prompt's extension points."""
    services: Services
    """The services installed so far (those of packages loaded before this one)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Installed:
    """What an install hook provides."""

    services: Services = field(default_factory=Services)
    start: Sequence[Work] = ()
    """Start-up work, run once every package is installed (e.g. reporting lost work)."""
    close: Sequence[Work] = ()
    """Run when the platform closes, last installed first."""
    stages: Sequence[StageContribution] = ()
    """Dispatch pipeline stages, each at its declared position (``before`` or ``after`` a
    built-in stage); placed once, when the package is installed."""


InstallHook = Callable[[PackageSetup], "Installed | Awaitable[Installed]"]


async def run_install_hook(hook: Callable[[Any], Any], setup: PackageSetup) -> Installed:
    """Call ``hook``; a wrong return value is a TypeError naming what it returned."""
    outcome = hook(setup)
    if inspect.isawaitable(outcome):
        outcome = await outcome
    if outcome is None:
        return Installed()
    if not isinstance(outcome, Installed):
        raise TypeError(f"install hook returned {type(outcome).__name__}, not Installed (or None)")
    return outcome
