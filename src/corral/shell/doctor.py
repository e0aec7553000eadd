"""What the machine offers shell confinement: kernel features, working tiers, advice.

:func:`diagnose` probes the kernel (user namespaces, Landlock's ABI, seccomp), runs ``true``
under each kernel tier with the flags commands get, and says which tier the configured
``sandbox`` mode would take and what an operator must do to get a stronger one. It only
reads the machine and runs ``true``: it writes nothing outside a temporary folder.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from corral.settings import Settings
from corral.shell.confinement import (
    TierCheck,
    check_bubblewrap,
    check_landlock,
    landlock_namespaces,
)
from corral.shell.landlock import landlock_abi
from corral.shell.reach import drive_out_of_reach
from corral.shell.sandbox import SandboxFiles
from corral.shell.seccomp import ARCHES, native_arch

__all__ = ["Diagnosis", "KernelFeatures", "diagnose", "kernel_features"]

_LANDLOCK_SCOPES_ABI = 6
_LANDLOCK_NET_ABI = 4


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelFeatures:
    """What the running kernel offers (None: the knob does not exist here)."""

    kernel: str
    arch: str
    root: bool
    max_user_namespaces: int | None
    unprivileged_userns_clone: bool | None
    apparmor_restricts_userns: bool | None
    landlock_abi: int
    lsm: str | None
    seccomp: bool
    seccomp_table: bool

    def to_json(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in self.__slots__}


def kernel_features() -> KernelFeatures:
    """Read the kernel's confinement knobs (no privileges needed)."""

    def flag(path: str) -> bool | None:
        value = _read(path)
        return None if value is None else value != "0"

    status = _read("/proc/self/status") or ""
    max_userns = _read("/proc/sys/user/max_user_namespaces")
    return KernelFeatures(
        kernel=os.uname().release,
        arch=native_arch(),
        root=os.geteuid() == 0,
        max_user_namespaces=int(max_userns) if max_userns and max_userns.isdigit() else None,
        unprivileged_userns_clone=flag("/proc/sys/kernel/unprivileged_userns_clone"),
        apparmor_restricts_userns=flag("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
        landlock_abi=landlock_abi(),
        lsm=_read("/sys/kernel/security/lsm"),
        seccomp="Seccomp:" in status,
        seccomp_table=native_arch() in ARCHES,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnosis:
    """The report `corral doctor` prints."""

    mode: str
    chosen: str | None
    """The tier commands would get under the configured mode (None: refused)."""
    features: KernelFeatures
    checks: tuple[TierCheck, ...]
    bwrap: str | None
    bwrap_version: str | None
    advice: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "chosen": self.chosen,
            "tiers": [{"tier": c.tier, "works": c.works, "reason": c.reason} for c in self.checks],
            "kernel": self.features.to_json(),
            "bwrap": self.bwrap,
            "bwrap_version": self.bwrap_version,
            "advice": self.advice,
        }


def _choose(mode: str, works: dict[str, bool]) -> str | None:
    if mode == "unconfined":
        return "unconfined"
    order = {"auto": ("bubblewrap", "landlock")}.get(mode, (mode,))
    return next((tier for tier in order if works.get(tier)), None)


def _advice(features: KernelFeatures, works: dict[str, bool], bwrap: str | None) -> list[str]:
    out: list[str] = []
    if not features.seccomp_table:
        out.append(
            f"No seccomp table for {features.arch!r}: neither kernel tier can run here; "
            "commands need sandbox = 'unconfined' (an explicit risk) until one is added."
        )
    if not works["bubblewrap"]:
        if bwrap is None:
            out.append("Install bubblewrap for the strongest tier: apt-get install bubblewrap.")
        elif features.max_user_namespaces == 0 or features.unprivileged_userns_clone is False:
            out.append(
                "Enable user namespaces for bubblewrap: sysctl -w user.max_user_namespaces="
                "15000 and, on Debian kernels, kernel.unprivileged_userns_clone=1. In a "
                "container, allow them (e.g. docker run --security-opt seccomp=unconfined, or "
                "a seccomp profile permitting clone/unshare with CLONE_NEWUSER)."
            )
        elif features.apparmor_restricts_userns:
            out.append(
                "AppArmor restricts unprivileged user namespaces: give bwrap a profile that "
                "allows 'userns' or set kernel.apparmor_restrict_unprivileged_userns=0."
            )
        else:
            out.append(
                "bubblewrap is installed but cannot create its namespaces here (see its error "
                "above); containers usually need user namespaces allowed by their runtime."
            )
    if features.landlock_abi == 0:
        out.append(
            "Landlock is missing or disabled: use a kernel >= 5.13 built with "
            "CONFIG_SECURITY_LANDLOCK=y and list 'landlock' in the lsm= boot parameter."
        )
    elif features.landlock_abi < _LANDLOCK_SCOPES_ABI:
        net = "" if features.landlock_abi >= _LANDLOCK_NET_ABI else "TCP rules (ABI 4), "
        out.append(
            f"Landlock ABI {features.landlock_abi}: the Landlock tier lacks {net}signal and "
            "abstract-socket scoping (ABI 6, kernel >= 6.12); seccomp still refuses sockets."
        )
    if works["landlock"] and not works["bubblewrap"] and not features.root:
        out.append(
            "Landlock without root has no PID or mount namespace: a command can list other "
            "processes and read their command lines (tokens included), and the drive root "
            "has no write rule around its private area (what a call starts is still killed "
            "when it ends). Make bubblewrap work, or run the platform as root: each call then "
            "gets its own PID and mount namespace."
        )
    if works["landlock"] and not works["bubblewrap"] and features.root:
        if not landlock_namespaces():
            out.append(
                "util-linux `unshare` was not found: Landlock-tier calls run without their own "
                "PID and mount namespace (other processes visible). Install util-linux."
            )
        out.append(
            "Under Landlock as root, commands run as the sandbox uid (setting sandbox_uid): "
            "sources they must write need to be writable by it (chown or group rights)."
        )
    return out


async def diagnose(settings: Settings) -> Diagnosis:
    """Probe this machine for ``settings`` (its mode, bubblewrap path and sandbox uid)."""
    features = kernel_features()
    folder = Path(tempfile.mkdtemp(prefix="corral-doctor-"))
    os.chmod(folder, 0o755)  # bubblewrap binds the /etc prepared here as the sandbox uid
    try:
        files = SandboxFiles.write(folder, uid=settings.sandbox_uid)
        bubblewrap, binary = await check_bubblewrap(
            settings.bwrap_path, files, uid=settings.sandbox_uid
        )
        landlock = await check_landlock(uid=settings.sandbox_uid)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    version = None
    if binary is not None:
        done = await asyncio.create_subprocess_exec(
            binary, "--version", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
        )
        out, _ = await done.communicate()
        version = out.decode("utf-8", "replace").strip() or None
    works = {"bubblewrap": bubblewrap.works, "landlock": landlock.works}
    advice = _advice(features, works, binary)
    if features.root and settings.drive_dir.is_dir():
        unreachable = drive_out_of_reach(settings.drive_dir, settings.sandbox_uid)
        if unreachable is not None:
            advice.append(f"Sandboxed commands cannot run: {unreachable}.")
    return Diagnosis(
        mode=settings.sandbox,
        chosen=_choose(settings.sandbox, works),
        features=features,
        checks=(bubblewrap, landlock),
        bwrap=binary,
        bwrap_version=version,
        advice=advice,
    )
