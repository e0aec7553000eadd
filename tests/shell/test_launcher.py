"""The helper launcher, with real processes: a root helper ends up the sandbox uid, filtered."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral.shell.launcher import launcher_argv

UID = 65534
_PROBE = """\
import errno, os
print('ids', os.getuid(), os.geteuid(), os.getgid(), os.getgroups())
open('made', 'w').close()
try:
    os.chmod('made', 0o4755)
    print('chmod ok')
except OSError as exc:
    print('chmod', errno.errorcode[exc.errno])
print('nnp', open('/proc/self/status').read().split('NoNewPrivs:')[1].split()[0])
"""


def _run(argv: list[str], cwd: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)


@pytest.fixture
def folder() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="corral-launch-", dir="/tmp"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_a_helper_runs_as_the_sandbox_uid_without_set_id_modes(folder: Path) -> None:
    done = _run(launcher_argv(["python3", "-c", _PROBE], uid=UID), str(folder))
    assert done.returncode == 0, done.stderr
    expected = UID if os.geteuid() == 0 else os.getuid()
    ids = next(row for row in done.stdout.splitlines() if row.startswith("ids "))
    assert ids.split()[1:3] == [str(expected), str(expected)]
    if os.geteuid() == 0:
        assert ids.endswith("[]") and os.lstat(folder / "made").st_uid == UID
    assert "chmod EPERM" in done.stdout and "nnp 1" in done.stdout
    assert not os.lstat(folder / "made").st_mode & 0o6000


def test_a_bad_invocation_says_what_was_wrong(folder: Path) -> None:
    done = _run([sys.executable, "-m", "corral.shell.launcher", "python3"], str(folder))
    assert done.returncode == 126 and "usage:" in done.stderr and "Traceback" not in done.stderr
    missing = _run(launcher_argv(["/nonexistent/server"], uid=UID), str(folder))
    assert missing.returncode == 126 and "cannot start '/nonexistent/server'" in missing.stderr


def test_a_module_in_the_working_folder_is_never_imported(folder: Path) -> None:
    """The launcher may start as root in a helper's writable home: ``python -m`` would put
    that folder first on sys.path, so a planted ``corral`` package would run as root."""
    planted = folder / "corral" / "shell"
    planted.mkdir(parents=True)
    hijack = "import os\nprint('HIJACKED', os.getuid())\n"
    for module in (folder / "corral" / "__init__.py", planted / "__init__.py"):
        module.write_text(hijack)
    (planted / "launcher.py").write_text(hijack)
    (folder / "sitecustomize.py").write_text(hijack)
    env = {**os.environ, "PYTHONPATH": str(folder), "PYTHONSTARTUP": str(folder / "corral")}
    done = subprocess.run(
        launcher_argv(["/bin/echo", "started"], uid=UID),
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "started\n" and "HIJACKED" not in done.stdout + done.stderr
