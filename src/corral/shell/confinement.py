"""Confinement tiers: which kernel boundary a command gets, and the process spec for it.

The tiers, strongest first:

- ``bubblewrap``: namespaces and a mount layout of the caller's sources
  (:mod:`corral.shell.sandbox`), an unprivileged uid in its own user namespace, the seccomp
  filter (:mod:`corral.shell.seccomp`), which refuses UNIX sockets that could address a
  path (a host daemon's socket inside a source); as root bubblewrap itself runs as the
  sandbox uid with no groups, so its user namespace maps to that host uid and never to root;
- ``landlock``: where user namespaces are unavailable, Landlock filesystem rules from the
  caller's sources (:mod:`corral.shell.landlock`) plus the same seccomp filter, which then
  also refuses sockets (no network namespace to lean on), applied by the child before exec;
  as root the child first becomes the unprivileged sandbox uid;
- ``unconfined``: only by the operator's explicit ``sandbox = "unconfined"``.

``sandbox = "auto"`` (the default) takes the first tier that works here; ``"bubblewrap"`` and
``"landlock"`` insist on one. Start-up runs ``true`` under each candidate with the very flags
commands get, so a tier is reported working only when it really is; every result names the
tier that applied.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from corral.errors import ToolError
from corral.settings import SandboxMode
from corral.shell.environment import SYSTEM_PATH, Environment, build_environment
from corral.shell.landlock import LandlockPlan, landlock_abi, maskable, plan_landlock
from corral.shell.landlock_launch import LAUNCHER, LaunchPayload
from corral.shell.runner import ProcessSpec, spawn_process
from corral.shell.sandbox import (
    SANDBOX_HOME,
    TOOLCHAIN,
    BoundSource,
    SandboxFiles,
    bwrap_argv,
    plan_mounts,
)
from corral.shell.seccomp import SeccompUnsupported, build_filter
from corral.shell.system_etc import host_entries

__all__ = [
    "CommandSpec",
    "Confinement",
    "Confiner",
    "SandboxStatus",
    "TierCheck",
    "check_bubblewrap",
    "check_landlock",
    "detect_confinement",
    "landlock_namespaces",
    "landlock_spec",
]

Confinement = Literal["bubblewrap", "landlock", "unconfined"]

_NETWORK_FAMILIES = (socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK)
"""Socket families the Landlock tier allows when the network is on, and the bubblewrap tier
always (with the network off they reach only the sandbox's own loopback). Never AF_UNIX: a
UNIX socket path reaches the host's daemons, from any source a daemon's socket lies in (or,
without a mount namespace, anywhere: the host broker too), and with the network on the
host's abstract sockets; nor AF_VSOCK, a way to the hypervisor's host that network
namespaces have not isolated."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TierCheck:
    """Whether one tier works on this machine, and why not when it does not."""

    tier: Confinement
    works: bool
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxStatus:
    """What start-up found: the configured mode and the tier commands run under."""

    mode: SandboxMode
    tier: Confinement | None
    """None: no allowed tier works, and commands are refused."""
    binary: str | None = None
    reason: str
    checks: tuple[TierCheck, ...] = ()
    uid: int | None = None
    """The uid sandboxed commands run as (None: the platform's own)."""
    blocked: bool = False
    """Refused before any tier was tried (the sandbox uid cannot reach the drive): no tier
    would work, and ``reason`` says what to change."""

    @property
    def available(self) -> bool:
        """A kernel boundary works (bubblewrap or Landlock)."""
        return self.tier in ("bubblewrap", "landlock")

    @property
    def usable(self) -> bool:
        """Commands may run: a kernel boundary works, or the operator chose unconfined."""
        return self.tier is not None

    def refusal(self) -> str:
        if self.blocked:
            return f"shell commands cannot run: {self.reason}."
        tried = "; ".join(f"{c.tier}: {c.reason}" for c in self.checks) or self.reason
        return (
            f"shell commands cannot run: no sandbox tier allowed by sandbox = {self.mode!r} "
            f"works here ({tried}). An operator must make one work (`corral doctor` says "
            "how: install bubblewrap, enable user namespaces or Landlock) or explicitly set "
            'sandbox = "unconfined" in the settings.'
        )

    def to_json(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "tier": self.tier,
            "available": self.available,
            "binary": self.binary,
            "reason": self.reason,
            "uid": self.uid,
            "checks": [{"tier": c.tier, "works": c.works, "reason": c.reason} for c in self.checks],
        }


@dataclass(slots=True, kw_only=True)
class CommandSpec:
    """One command ready to spawn under a tier, with its environment and its cleanup."""

    spec: ProcessSpec
    environment: Environment
    cleanup: Callable[[], None] = field(default=lambda: None)


def _sandbox_uid(configured: int) -> int | None:
    """The host uid commands get, both tiers: the configured one as root (who can and must
    switch), else None (the platform's own, already unprivileged)."""
    return configured if os.geteuid() == 0 else None


def _program(families: tuple[int, ...] | None) -> bytes:
    return build_filter(socket_families=families)


@dataclass(slots=True, kw_only=True)
class Confiner:
    """Builds the process spec of a command under the tier start-up chose."""

    status: SandboxStatus
    files: SandboxFiles
    data_dir: str
    protected: Sequence[str]
    sandbox_uid: int
    _programs: dict[tuple[int, ...] | None, bytes] = field(default_factory=dict)
    _tcp: bytes | None = None

    def seccomp_program(self, families: tuple[int, ...] | None) -> bytes:
        """The filter, built once per socket policy (None: every family allowed)."""
        if families not in self._programs:
            self._programs[families] = _program(families)
        return self._programs[families]

    def tcp_program(self) -> bytes:
        """The filter of the Landlock tier's proxy mode: TCP sockets only."""
        if self._tcp is None:
            self._tcp = build_filter(tcp_only=True)
        return self._tcp

    def command(
        self,
        argv: Sequence[str],
        *,
        cwd: str,
        sources: Sequence[BoundSource],
        network: bool,
        call_env: Mapping[str, str],
        declared: Mapping[str, str],
        variables: Mapping[str, str] | None = None,
        proxy_port: int | None = None,
    ) -> CommandSpec:
        """``argv`` in ``cwd`` seeing ``sources``, under the tier start-up chose;
        ``variables`` are the platform's own plain ones (a skill's ``SKILL_DIR``…).
        ``proxy_port`` (Landlock tier, network off): TCP sockets only, and a connect only
        to that port (the egress proxy's, on the host's loopback)."""
        tier = self.status.tier
        if tier == "bubblewrap" and self.status.binary is not None:
            environment = build_environment(
                platform_env=os.environ,
                home=SANDBOX_HOME,
                call_env=call_env,
                declared=declared,
                variables=variables,
            )
            mounts = plan_mounts(
                self.files, sources, data_dir=self.data_dir, protected=self.protected,
                network=network,
            )  # fmt: skip
            full = bwrap_argv(
                self.status.binary, mounts, network=network, cwd=cwd, argv=argv,
                uid=self.sandbox_uid,
            )  # fmt: skip
            spec = ProcessSpec(
                argv=full,
                env=environment.values,
                cwd=cwd,
                sandboxed=True,
                seccomp=self.seccomp_program(_NETWORK_FAMILIES),
                run_as=_sandbox_uid(self.sandbox_uid),
            )
            return CommandSpec(spec=spec, environment=environment)
        if tier == "landlock":
            return self._landlock(
                argv, cwd, sources, network, call_env, declared, variables, proxy_port
            )
        if tier != "unconfined":
            # Never a silent fall to no boundary: only the operator's opt-in runs bare.
            raise ToolError(self.status.refusal(), code="sandbox_unavailable")
        home = tempfile.mkdtemp(prefix="corral-home-")
        environment = build_environment(
            platform_env=os.environ,
            home=home,
            path=os.environ.get("PATH", SYSTEM_PATH),
            call_env=call_env,
            declared=declared,
            variables=variables,
        )
        spec = ProcessSpec(argv=argv, env=environment.values, cwd=cwd, sandboxed=False)
        return CommandSpec(
            spec=spec, environment=environment, cleanup=lambda: shutil.rmtree(home, True)
        )

    def _landlock(
        self,
        argv: Sequence[str],
        cwd: str,
        sources: Sequence[BoundSource],
        network: bool,
        call_env: Mapping[str, str],
        declared: Mapping[str, str],
        variables: Mapping[str, str] | None,
        proxy_port: int | None = None,
    ) -> CommandSpec:
        uid = _sandbox_uid(self.sandbox_uid)
        home = tempfile.mkdtemp(prefix="corral-home-")
        if uid is not None:
            os.chown(home, uid, uid)
        environment = build_environment(
            platform_env=os.environ,
            home=home,
            call_env=call_env,
            declared=declared,
            variables=variables,
        )
        environment.values["TMPDIR"] = home
        proxied = proxy_port is not None and not network
        if proxied:
            program = self.tcp_program()
        else:
            program = self.seccomp_program(_NETWORK_FAMILIES if network else ())
        namespaced = uid is not None and _UNSHARE is not None
        masks = maskable(self.protected) if namespaced else []
        plan = landlock_plan(
            home=home,
            sources=sources,
            data_dir=self.data_dir,
            protected=self.protected,
            network=network,
            masked=masks,
            connect_ports=(proxy_port,) if proxied and proxy_port is not None else (),
        )
        spec, scratch = landlock_spec(
            argv, cwd=cwd, env=environment.values, plan=plan, program=program, uid=uid,
            masks=masks,
        )  # fmt: skip

        def cleanup() -> None:
            shutil.rmtree(home, True)
            shutil.rmtree(scratch, True)

        return CommandSpec(spec=spec, environment=environment, cleanup=cleanup)


_UNSHARE = shutil.which("unshare", path=SYSTEM_PATH)


def landlock_namespaces() -> bool:
    """Whether Landlock-tier calls get their own PID and mount namespace here (root and
    util-linux ``unshare``)."""
    return os.geteuid() == 0 and _UNSHARE is not None


_NAMESPACES = ["--pid", "--fork", "--kill-child", "--mount-proc", "--propagation", "private"]


def landlock_spec(
    argv: Sequence[str],
    *,
    cwd: str,
    env: dict[str, str],
    plan: LandlockPlan,
    program: bytes,
    uid: int | None,
    masks: Sequence[str] = (),
) -> tuple[ProcessSpec, str]:
    """The process spec of one Landlock-tier command, and a scratch folder to remove after.

    As root (``uid`` set) the command gets its own PID and mount namespace through util-linux
    ``unshare`` and :mod:`corral.shell.landlock_launch`: it sees only its own processes, all
    of them end with it, and ``masks`` hide the protected paths. Without root there are no
    namespaces to make: the launcher confines itself, then stays as the command's parent and
    child subreaper, so what the command starts remains findable and is killed when it ends.
    """
    namespaced = uid is not None and _UNSHARE is not None
    scratch = tempfile.mkdtemp(prefix="corral-launch-")
    mask_file = os.path.join(scratch, "mask")
    os.close(os.open(mask_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o000))
    payload = os.path.join(scratch, "payload")
    LaunchPayload(
        cwd=cwd,
        uid=-1 if uid is None else uid,
        masks=tuple(masks) if namespaced else (),
        mask_file=mask_file,
        attr=plan.ruleset_attr(),
        handled=plan.handled_fs,
        rules=tuple(plan.pairs()),
        seccomp=program,
        reaper=not namespaced,
        ports=plan.ports(),
    ).write(payload)
    launcher = [sys.executable, "-I", "-S", LAUNCHER, payload, "--", *argv]
    if not namespaced:
        return ProcessSpec(argv=launcher, env=env, cwd=cwd, sandboxed=False), scratch
    assert _UNSHARE is not None
    return ProcessSpec(
        argv=[_UNSHARE, *_NAMESPACES, *launcher], env=env, cwd=cwd, sandboxed=False
    ), scratch


def landlock_plan(
    *,
    home: str,
    sources: Sequence[BoundSource],
    data_dir: str,
    protected: Sequence[str],
    network: bool,
    abi: int | None = None,
    masked: Sequence[str] = (),
    connect_ports: tuple[int, ...] = (),
) -> LandlockPlan:
    """The Landlock rules of one command: toolchain, home, devices and the caller's sources."""
    toolchain = [*TOOLCHAIN, *host_entries(network=network), "/etc/nsswitch.conf"]
    if network:
        toolchain.append("/etc/hosts")
    return plan_landlock(
        abi=landlock_abi() if abi is None else abi,
        toolchain=toolchain,
        home=home,
        sources=[(s.root, s.writable) for s in sources],
        data_dir=data_dir,
        protected=protected,
        network=network,
        masked=masked,
        connect_ports=connect_ports,
    )


# -- start-up detection -------------------------------------------------------------------


async def _runs(spec: ProcessSpec, within: float) -> str | None:
    """Run ``spec`` (a ``true``) to its end; None when it exited 0, else why not."""
    try:
        process = await spawn_process(spec)
        _, err = await asyncio.wait_for(process.communicate(), within)
    except (OSError, TimeoutError) as exc:
        return f"{type(exc).__name__}: {exc}"
    if process.returncode != 0:
        lines = err.decode("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else f"exit status {process.returncode}"
    return None


async def check_bubblewrap(
    binary: str, files: SandboxFiles, *, uid: int, within: float = 10.0
) -> tuple[TierCheck, str | None]:
    """Run ``true`` in a minimal sandbox with every flag commands get (uid, seccomp)."""
    found = shutil.which(binary)
    if found is None:
        return TierCheck(
            tier="bubblewrap", works=False, reason=f"no bubblewrap binary {binary!r}"
        ), None
    try:
        program = build_filter(socket_families=_NETWORK_FAMILIES)
    except SeccompUnsupported as exc:
        return TierCheck(tier="bubblewrap", works=False, reason=str(exc)), found
    mounts = plan_mounts(files, (), data_dir="/nonexistent", protected=(), network=False)
    argv = bwrap_argv(
        found, mounts, network=False, cwd="/", argv=["/bin/sh", "-c", "true"], uid=uid
    )
    spec = ProcessSpec(
        argv=argv,
        env={"PATH": "/usr/bin:/bin"},
        cwd="/",
        sandboxed=True,
        seccomp=program,
        run_as=_sandbox_uid(uid),
    )
    failure = await _runs(spec, within)
    if failure is not None:
        return TierCheck(tier="bubblewrap", works=False, reason=failure), found
    return TierCheck(tier="bubblewrap", works=True, reason="bubblewrap works"), found


async def check_landlock(*, uid: int, within: float = 10.0) -> TierCheck:
    """Run ``true`` under Landlock rules and the seccomp filter, as commands would."""
    abi = landlock_abi()
    if abi == 0:
        return TierCheck(
            tier="landlock", works=False, reason="the kernel has no Landlock (or it is disabled)"
        )
    try:
        program = build_filter(socket_families=())
    except SeccompUnsupported as exc:
        return TierCheck(tier="landlock", works=False, reason=str(exc))
    home = tempfile.mkdtemp(prefix="corral-check-")
    switch = _sandbox_uid(uid)
    scratch: str | None = None
    try:
        if switch is not None:
            os.chown(home, switch, switch)
        plan = landlock_plan(
            home=home, sources=(), data_dir="/nonexistent", protected=(), network=False, abi=abi
        )
        spec, scratch = landlock_spec(
            ["/bin/sh", "-c", "true"], cwd=home, env={"PATH": "/usr/bin:/bin"}, plan=plan,
            program=program, uid=switch,
        )  # fmt: skip
        failure = await _runs(spec, within)
    finally:
        shutil.rmtree(home, ignore_errors=True)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    if failure is not None:
        return TierCheck(tier="landlock", works=False, reason=failure)
    if switch is None:
        isolation = "no PID namespace (not root): calls can see other processes"
    elif _UNSHARE is None:
        isolation = "no PID namespace (util-linux unshare not found): calls can see other processes"
    else:
        isolation = "each call in its own PID and mount namespace"
    return TierCheck(tier="landlock", works=True, reason=f"Landlock ABI {abi} works, {isolation}")


async def detect_confinement(
    mode: SandboxMode, binary: str, files: SandboxFiles, *, uid: int
) -> SandboxStatus:
    """The tier commands get under ``mode``: the first candidate that works here."""
    if mode == "unconfined":
        return SandboxStatus(
            mode=mode, tier="unconfined", reason="the operator set sandbox = 'unconfined'"
        )
    checks: list[TierCheck] = []
    found: str | None = None
    if mode in ("auto", "bubblewrap"):
        check, found = await check_bubblewrap(binary, files, uid=uid)
        checks.append(check)
        if check.works:
            return SandboxStatus(
                mode=mode, tier="bubblewrap", binary=found, reason=check.reason,
                checks=tuple(checks), uid=uid,
            )  # fmt: skip
    if mode in ("auto", "landlock"):
        check = await check_landlock(uid=uid)
        checks.append(check)
        if check.works:
            return SandboxStatus(
                mode=mode, tier="landlock", binary=found, reason=check.reason,
                checks=tuple(checks), uid=_sandbox_uid(uid),
            )  # fmt: skip
    return SandboxStatus(
        mode=mode,
        tier=None,
        binary=found,
        reason="; ".join(f"{c.tier}: {c.reason}" for c in checks),
        checks=tuple(checks),
    )
