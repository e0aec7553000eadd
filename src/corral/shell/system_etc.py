"""The sandbox's ``/etc``: one folder, prepared ahead, bound with a single mount.

Binding each host ``/etc`` file separately cost one mount apiece (28 on a Debian host, more
than the rest of the sandbox together). Instead the platform copies what programs need into
``<private>/sandbox/etc-<n>`` and points ``<private>/sandbox/etc`` at it: the loader cache,
alternatives, certificates, time zone, locale and protocol tables, the interpreters' own
folders. Beside them are synthetic ``passwd``, ``group``, ``hosts`` and ``nsswitch.conf``
(the host's accounts and name stay hidden) and an empty ``resolv.conf`` over which the
host's is bound only when the network is on.

Only what every user of the host may read is copied (``/etc/ssl/private`` stays behind).
A refresh builds a new generation and swaps the link atomically, so a sandbox starting
meanwhile binds a complete folder. :func:`prepare_etc` runs when the platform opens and
copies again only when the host's entries changed since the last copy (a package upgrade
rewrote the loader cache, say).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import stat
import tempfile
from pathlib import Path

__all__ = ["HOSTNAME", "SYNTHETIC_ETC", "host_entries", "prepare_etc", "system_files"]

HOSTNAME = "corral-sandbox"
_ETC = (
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "timezone",
    "ssl", "ca-certificates", "ca-certificates.conf", "pki", "crypto-policies", "mime.types",
    "magic", "magic.mime", "locale.alias", "locale.conf", "protocols", "services", "gai.conf",
    "host.conf", "debian_version", "os-release", "perl", "python3*", "java-*",
)  # fmt: skip
_NETWORK_ETC = ("resolv.conf",)
SYNTHETIC_ETC = ("/etc/passwd", "/etc/group", "/etc/hosts", "/etc/nsswitch.conf")


def host_entries(*, network: bool = False) -> tuple[str, ...]:
    """The host ``/etc`` entries a sandboxed command sees (copied, or bound for the network)."""
    names = [*_ETC, *(_NETWORK_ETC if network else ())]
    found: list[str] = []
    for name in names:
        for path in sorted(glob.glob(f"/etc/{name}")) if "*" in name else [f"/etc/{name}"]:
            if os.path.lexists(path):
                found.append(path)
    return tuple(found)


def system_files(*, network: bool = False) -> tuple[str, ...]:
    """Every ``/etc`` path a sandboxed command can read (host copies, then synthetic files)."""
    return (*host_entries(network=network), *SYNTHETIC_ETC)


def _synthetic(uid: int, gid: int, user: str = "corral") -> dict[str, str]:
    home = "/tmp/home"
    nobody = "" if uid == 65534 else "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    return {
        "passwd": f"{user}:x:{uid}:{gid}:{user}:{home}:/bin/bash\n{nobody}",
        "group": f"{user}:x:{gid}:\n" + ("" if gid == 65534 else "nogroup:x:65534:\n"),
        "hosts": f"127.0.0.1\tlocalhost {HOSTNAME}\n::1\tlocalhost ip6-localhost\n",
        "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files dns\n",
        "resolv.conf": "",
    }


def _public(path: str) -> bool:
    """Readable by every user: files need o+r, folders o+rx (links are kept as links)."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        return True
    if stat.S_ISDIR(info.st_mode):
        return info.st_mode & 0o005 == 0o005
    return stat.S_ISREG(info.st_mode) and info.st_mode & 0o004 != 0


def _signature(uid: int, gid: int) -> str:
    """What the copy depends on: each entry's and each sub-folder's change time."""
    rows = [f"{uid}:{gid}"]
    for entry in host_entries():
        info = os.lstat(entry)
        rows.append(f"{entry} {info.st_mtime_ns} {info.st_size}")
        if stat.S_ISDIR(info.st_mode):
            for folder, dirs, _ in os.walk(entry):
                for name in dirs:
                    with contextlib.suppress(OSError):
                        rows.append(f"{folder}/{name} {os.lstat(f'{folder}/{name}').st_mtime_ns}")
    return "\n".join(rows)


def _copy(entry: str, target: str) -> None:
    """Copy one entry: links as links, files as world-readable copies, folders walked.

    Plain calls rather than ``shutil.copytree``: its per-entry ``copystat`` made the copy of
    ``/etc/alternatives`` (hundreds of links) take most of a second.
    """
    if not _public(entry):
        return
    if os.path.islink(entry):
        os.symlink(os.readlink(entry), target)
    elif os.path.isdir(entry):
        os.mkdir(target, 0o755)
        with os.scandir(entry) as found:
            for child in found:
                _copy(child.path, os.path.join(target, child.name))
    else:
        shutil.copyfile(entry, target)
        os.chmod(target, 0o644)


def prepare_etc(folder: Path, *, uid: int, gid: int) -> Path:
    """``folder/etc`` up to date with the host (copied again only when the host changed)."""
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / "etc"
    stamp = folder / "etc.signature"
    signature = _signature(uid, gid)
    current = os.path.realpath(link) if link.is_symlink() else None
    if current and os.path.isdir(current) and stamp.is_file() and stamp.read_text() == signature:
        return link
    fresh = Path(tempfile.mkdtemp(prefix="etc-", dir=folder))
    for entry in host_entries():
        _copy(entry, str(fresh / os.path.basename(entry)))
    for name, text in _synthetic(uid, gid).items():
        (fresh / name).write_text(text)
        (fresh / name).chmod(0o644)
    fresh.chmod(0o755)
    pointer = folder / f"link-{fresh.name}"
    pointer.symlink_to(fresh.name)
    os.replace(pointer, link)
    stamp.write_text(signature)
    live = os.path.realpath(link)
    for old in folder.glob("etc-*"):
        if str(old) != live:
            # A sandbox that bound an old generation keeps its mount; removing it is safe.
            shutil.rmtree(old, ignore_errors=True)
    return link
