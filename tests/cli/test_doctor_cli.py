"""`corral doctor` in a real process: tiers, kernel features, advice and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from corral.shell.landlock import landlock_abi
from tests.shell.conftest import BWRAP


def doctor(data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "CORRAL_DATA_DIR": str(data_dir), **env}
    return subprocess.run(
        [sys.executable, "-m", "corral", "doctor", *args], capture_output=True, text=True, env=full
    )


def test_doctor_reports_the_tiers_and_kernel_features(data_dir: Path) -> None:
    done = doctor(data_dir, "--json")
    report = json.loads(done.stdout)
    tiers = {row["tier"]: row["works"] for row in report["tiers"]}
    assert tiers == {"bubblewrap": BWRAP, "landlock": landlock_abi() > 0}
    assert report["kernel"]["landlock_abi"] == landlock_abi()
    assert report["kernel"]["seccomp"] is True
    expected = "bubblewrap" if BWRAP else ("landlock" if landlock_abi() else None)
    assert report["mode"] == "auto" and report["chosen"] == expected
    assert done.returncode == (0 if expected else 1)
    text = doctor(data_dir).stdout
    assert "Confinement tiers" in text and "Kernel" in text and "To do" in text
    assert not data_dir.exists()  # it probes; it writes nothing of the platform's


def test_doctor_says_what_to_do_when_the_insisted_tier_cannot_run(data_dir: Path) -> None:
    done = doctor(data_dir, CORRAL_SANDBOX="bubblewrap", CORRAL_BWRAP_PATH="/nonexistent/bwrap")
    assert done.returncode == 1, done.stderr
    assert "none: shell commands are refused" in done.stdout
    assert "apt-get install bubblewrap" in done.stdout
    assert "Traceback" not in done.stderr
    bad = doctor(data_dir, CORRAL_SANDBOX="sometimes")
    assert bad.returncode == 2 and "sandbox" in bad.stderr and "Traceback" not in bad.stderr


def test_doctor_lists_the_problems_of_the_hooks_file(data_dir: Path) -> None:
    assert json.loads(doctor(data_dir, "--json").stdout)["hook_problems"] == []
    data_dir.mkdir(parents=True)
    broken = {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "cmd"}]}]}
    (data_dir / "hooks.json").write_text(json.dumps(broken), encoding="utf-8")
    done = doctor(data_dir, "--json")
    (problem,) = json.loads(done.stdout)["hook_problems"]
    assert "hooks.PreToolUse[0].hooks[0].type must be 'command' or 'http'" in problem
    assert done.returncode == 1
    text = doctor(data_dir).stdout
    assert "Operator hooks" in text and "fix the hooks file:" in text
    (data_dir / "hooks.json").write_text("{not json", encoding="utf-8")
    garbled = doctor(data_dir, "--json")
    assert "not readable JSON" in json.loads(garbled.stdout)["hook_problems"][0]
    assert "Traceback" not in garbled.stderr
