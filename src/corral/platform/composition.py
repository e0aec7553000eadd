"""The composition root: open the kernel, build the runtime, install every package.

Order: the kernel (folders, migrations, seed data, package discovery); the operator hooks
(``<data_dir>/hooks.json`` and the live setting) and the permission rules stage
(``<data_dir>/rules/``, before approval); the runtime on it,
whose report sink is the first service; each package's install hook (the built-in
package's is :func:`~corral.platform.built_in.install_built_in`: its services and their
registrations on the runtime are built here, above the channels), whose services join
the ones before and whose pipeline stages take their declared places (a failing hook, a
service provided twice or a stage that cannot be placed leaves that package out, named in
``corral tools list``); then runs lost to a restart are recovered and the packages'
start-up work runs. Nothing below this module imports it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from corral.kernel import Kernel, open_kernel
from corral.packages.core.rules_stage import rules_stage
from corral.platform.built_in import BUILT_IN, install_built_in
from corral.platform.core import Platform
from corral.runtime.budgets import budget_stage, check_live_budgets
from corral.runtime.hooks import build_hooks
from corral.runtime.hooks.stage import hook_stage
from corral.runtime.package_setup import Installed, PackageSetup, run_install_hook
from corral.runtime.runtime import Runtime
from corral.settings import Settings, load_settings
from corral.store.engine import unreachable
from corral.store.outages import database_unavailable
from corral.tools.contract import LoadError
from corral.tools.registry import Package
from corral.tools.services import Services
from corral.tools.stages import StageError

__all__ = ["open", "open_platform"]

log = logging.getLogger("corral.platform")


async def open_platform(
    data_dir: str | os.PathLike[str] | None = None,
    *,
    services: Services | None = None,
    settings: Settings | None = None,
    **overrides: Any,
) -> Platform:
    """Open the platform on ``data_dir`` (default: settings); close it when done.

    ``overrides`` are settings. ``services`` replace installed ones before any start-up work
    runs (an embedding program's own web access, a test's report sink). ``settings``, when
    given, are the ones ``data_dir`` and ``overrides`` name, already loaded by the caller."""
    if settings is None:
        settings = load_settings(data_dir, **overrides)
    kernel = await open_kernel(settings)
    try:
        hooks = build_hooks(kernel)  # a broken hooks.json refuses to start, with the reason
        runtime = Runtime(kernel)
    except BaseException:  # or a job runner the settings cannot have (cluster on SQLite)
        await kernel.close()
        raise
    runtime.hooks = hooks
    kernel.dispatcher.add_stages([hook_stage(hooks, kernel.dispatcher.approval_required)])
    hooks.on_change(kernel.dispatcher.recheck_stages)  # in the chain only while configured
    kernel.dispatcher.add_stages([rules_stage(kernel.command_rules)])
    kernel.dispatcher.add_stages([budget_stage(runtime.budgets, runtime.budgeted)])
    runtime.budgeted.on_change(kernel.dispatcher.recheck_stages)  # in the chain while needed
    kernel.admin.check_live("budgets", check_live_budgets)
    platform = Platform(kernel, runtime, hooks)
    try:
        kernel.services = Services(reports=runtime.reports)
        installed: list[Installed] = []
        for package, hook in _with_hooks(kernel):
            done = await _install(package, hook, kernel, runtime)
            for closer in done.close:  # at once: a later failure still closes what is open
                platform.on_close(closer)
            installed.append(done)
        if services is not None:
            platform.provide(services)
        async with _database_refusals_explained(kernel):
            await runtime.open_jobs()
            await runtime.recover()
        for done in installed:
            for work in done.start:
                await work()
    except BaseException:
        await platform.close()
        raise
    return platform


@asynccontextmanager
async def _database_refusals_explained(kernel: Kernel) -> AsyncIterator[None]:
    """A database that refuses a connection while the platform opens (the server full, or
    gone since the first connection) is a ConfigError saying so, never a traceback."""
    try:
        yield
    except Exception as exc:
        if not database_unavailable(exc):
            raise
        raise unreachable(kernel.engine, exc) from None


InstallHook = Callable[[PackageSetup], Any]


def _with_hooks(kernel: Kernel) -> list[tuple[Package, InstallHook]]:
    """Each package with its install hook: the built-in package's is built here."""
    hooks: list[tuple[Package, InstallHook]] = []
    for package in kernel.registry.packages.values():
        if package.name == BUILT_IN and package.origin == "entry_point":
            hooks.append((package, install_built_in))
        elif package.install is not None:
            hooks.append((package, package.install))
    return hooks


async def _install(
    package: Package, hook: InstallHook, kernel: Kernel, runtime: Runtime
) -> Installed:
    """Run one package's install hook, join its services to the kernel's and place its
    pipeline stages: all of it, or none when one part fails."""
    setup = PackageSetup(
        package=package.name, kernel=kernel, runtime=runtime, services=kernel.services
    )
    try:
        done = await run_install_hook(hook, setup)
        services = kernel.services.joined(done.services)
        kernel.dispatcher.add_stages(done.stages)
        kernel.services = services
    except StageError as exc:
        log.error("package %r: a pipeline stage cannot be placed: %s", package.name, exc)
        _leave_out(kernel, package, "a pipeline stage of it cannot be placed", str(exc))
        return Installed()
    except Exception as exc:
        log.exception("package %r failed to install; its tools are left out", package.name)
        _leave_out(kernel, package, "the install hook failed", f"{type(exc).__name__}: {exc}")
        return Installed()
    return done


def _leave_out(kernel: Kernel, package: Package, reason: str, detail: str) -> None:
    kernel.registry.leave_out(
        package.name,
        LoadError(
            file=str(package.path),
            pointer="",
            message=f"{reason}, so the package's tools are left out: {detail}",
            package=package.name,
        ),
    )


@asynccontextmanager
async def open(
    data_dir: str | os.PathLike[str] | None = None,
    *,
    services: Services | None = None,
    **overrides: Any,
) -> AsyncIterator[Platform]:
    """Open the platform on ``data_dir`` (default: settings), closing it on exit; see
    :func:`open_platform`."""
    platform = await open_platform(data_dir, services=services, **overrides)
    try:
        yield platform
    finally:
        await platform.close()
