"""What a sandboxed command sees, read from inside: its mount table and what it may write.

A guard for the mount plan's cost work: however the bubblewrap arguments are built, the
kernel must show the same view. The spec is a representative one: a careless source over
the data folder's parent (so the data folder is hidden under a read-only tmpfs and the
drive bound back inside it), a read-only source nested in it, the drive's ``.corral``
masked, network off. The command reads ``/proc/self/mountinfo`` and tries to create a file
in each folder that matters.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from corral.kernel.bootstrap import SYSTEM_SOURCES
from corral.platform import Platform
from corral.shell.sandbox import TOOLCHAIN
from tests.shell.conftest import needs_bwrap

SANDBOX_UID = 65534

PROBE = r"""
import json, os, sys
own = {"tmpfs", "proc"}
mounts = []
for line in open("/proc/self/mountinfo"):
    left, _, right = line.partition(" - ")
    fields = left.split()
    options = set(fields[5].split(",")) & {"ro", "rw", "nosuid", "nodev", "noexec"}
    kind = right.split()[0]
    mounts.append([fields[4], kind if kind in own else "host", ",".join(sorted(options))])
def can_write(folder):
    try:
        fd = os.open(os.path.join(folder, ".probe"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except OSError as exc:
        return "absent" if not os.path.lexists(folder) else os.strerror(exc.errno)
    os.close(fd)
    os.unlink(os.path.join(folder, ".probe"))
    return "writable"
folders = json.loads(bytes.fromhex(sys.argv[1]))
print(json.dumps({"mounts": mounts, "write": {f: can_write(f) for f in folders}}))
"""


def _toolchain() -> list[list[str]]:
    """The host's toolchain tops that are folders, and the other system sources (``/opt``):
    each a read-only bind (a top that is a link is a link)."""
    tops = [t for t in TOOLCHAIN if os.path.isdir(t) and not os.path.islink(t)]
    for root in SYSTEM_SOURCES.values():
        real = os.path.realpath(root)
        inside = any(real == t or real.startswith(t + "/") for t in tops)
        if os.path.isdir(real) and not inside:
            tops.append(real)
    return [[t, "host", "nodev,nosuid,ro"] for t in tops]


@needs_bwrap
async def test_the_sandbox_view_of_a_representative_spec(
    fast: Platform, data_dir: Path, drive: Path
) -> None:
    parent = data_dir.parent
    docs = parent / "docs"
    docs.mkdir()
    if os.geteuid() == 0:  # a writable source is the sandbox uid's own
        os.chown(parent, SANDBOX_UID, SANDBOX_UID)
        os.chown(docs, SANDBOX_UID, SANDBOX_UID)
    await fast.admin.add_source("everything", str(parent))
    await fast.admin.grant_source(
        "everything", principal_kind="role", principal="owner", rights="rwx"
    )
    await fast.admin.add_source("docs", str(docs))
    await fast.admin.grant_source("docs", principal_kind="role", principal="owner", rights="r")
    (drive / "probe.py").write_text(PROBE)
    folders = ["/", "/usr", "/etc", "/dev", "/tmp", "/tmp/home", "/var/tmp", "/proc/self"]
    folders += [str(p) for p in (parent, data_dir, drive, drive / ".corral", docs)]
    result = await fast.call_tool(
        # hex: the analysis would refuse a command naming the masked folder, as it should
        "execute",
        {"command": f"python3 probe.py {json.dumps(folders).encode().hex()}"},
    )
    assert result.data is not None and result.data.get("exit_code") == 0, result.text
    assert result.data["confinement"] == "bubblewrap" and result.data["network"] == "off"
    seen = json.loads(result.text.splitlines()[0])

    mounts: list[list[str]] = seen["mounts"]
    # Ordered by depth: a later mount never covers an earlier one.
    points = [m[0] for m in mounts]
    for i, earlier in enumerate(points):
        for later in points[i + 1 :]:
            assert not (earlier == later or earlier.startswith(later.rstrip("/") + "/")), points
    private = "nodev,nosuid,rw"
    expected = [
        ["/", "tmpfs", private],
        *_toolchain(),
        ["/etc", "host", "nodev,nosuid,ro"],
        ["/proc", "proc", "nodev,noexec,nosuid,rw"],
        ["/dev", "tmpfs", private],
        ["/tmp", "tmpfs", private],
        *[[f"/dev/{name}", "host", "nosuid,rw"] for name in ("null", "zero", "full")],
        *[[f"/dev/{name}", "host", "nosuid,rw"] for name in ("random", "urandom", "tty")],
        ["/var/tmp", "tmpfs", private],
        [str(parent), "host", private],
        [str(data_dir), "tmpfs", "nodev,nosuid,ro"],
        [str(docs), "host", "nodev,nosuid,ro"],
        [str(drive), "host", private],
        [str(drive / ".corral"), "tmpfs", "nodev,nosuid,ro"],
    ]
    assert sorted(mounts) == sorted(expected)

    read_only = "Read-only file system"
    assert seen["write"] == {
        "/": "writable",  # the sandbox's own tmpfs, gone with it
        "/usr": read_only,
        "/etc": read_only,
        "/dev": "writable",
        "/tmp": "writable",
        "/tmp/home": "writable",
        "/var/tmp": "writable",
        "/proc/self": "No such file or directory",
        str(parent): "writable",
        str(data_dir): read_only,
        str(drive): "writable",
        str(drive / ".corral"): read_only,
        str(docs): read_only,
    }
