"""`corral credentials` in real processes: values come from stdin, never from arguments,
and no command prints a stored value."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

from tests.cli.processes import corral_cli

VALUE = "tvly-cli-0123456789abcdef"


def run(data_dir: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return corral_cli(data_dir, "credentials", *args, stdin=stdin)


def test_set_list_rotate_remove_without_ever_printing_the_value(data_dir: Path) -> None:
    done = [run(data_dir, "set", "tavily", stdin=VALUE + "\n")]
    assert done[-1].returncode == 0, done[-1].stderr
    assert "stored user credential 'tavily'" in done[-1].stdout
    done.append(run(data_dir, "set", "brave", "--project", "--provider", "brave", stdin=VALUE))
    assert done[-1].returncode == 0, done[-1].stderr
    done.append(run(data_dir, "list", "--json"))
    listed = json.loads(done[-1].stdout)
    assert [(r["name"], r["scope"], r["hasValue"]) for r in listed] == [
        ("tavily", "user", True),
        ("brave", "project", True),
    ]
    done.append(run(data_dir, "rotate-key"))
    assert "2 value(s) re-encrypted" in done[-1].stdout
    key_file = data_dir / "private" / "credentials.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    done.append(run(data_dir, "remove", "tavily"))
    assert done[-1].returncode == 0
    done.append(run(data_dir, "list"))
    assert "tavily" not in done[-1].stdout and "brave" in done[-1].stdout
    assert all(VALUE not in d.stdout + d.stderr for d in done)


def test_mistakes_are_explained_without_a_traceback(data_dir: Path) -> None:
    empty = run(data_dir, "set", "tavily", stdin="")
    assert empty.returncode == 2 and "nothing was stored" in empty.stderr
    bad = run(data_dir, "set", "Bad Name", stdin=VALUE)
    assert bad.returncode == 2 and "credential name 'Bad Name' is not allowed" in bad.stderr
    ghost = run(data_dir, "remove", "ghost")
    assert ghost.returncode == 2 and "no user credential named 'ghost'" in ghost.stderr
    # A value on the command line is not an option at all.
    argv = run(data_dir, "set", "tavily", VALUE)
    assert argv.returncode == 2 and VALUE not in argv.stdout
    assert all("Traceback" not in r.stderr for r in (empty, bad, ghost, argv))


def test_set_names_the_hosts_a_credential_is_injected_for(data_dir: Path) -> None:
    done = run(
        data_dir,
        "set",
        "forge",
        "--inject-host",
        "github.com",
        "--inject-host",
        "*.githubusercontent.com",
        "--inject-as",
        "basic",
        stdin=VALUE,
    )
    assert done.returncode == 0, done.stderr
    assert "injected by the egress proxy as basic for github.com, *.githubusercontent.com" in (
        done.stdout
    )
    listed = json.loads(run(data_dir, "list", "--json").stdout)
    assert listed[0]["injectHosts"] == ["github.com", "*.githubusercontent.com"]
    assert listed[0]["injectAs"] == "basic"


def test_injection_mistakes_are_explained_before_reading_a_value(data_dir: Path) -> None:
    bad_host = run(data_dir, "set", "forge", "--inject-host", "https://github.com", stdin=VALUE)
    assert bad_host.returncode == 2 and "inject host 'https://github.com'" in bad_host.stderr
    no_field = run(
        data_dir, "set", "forge", "--inject-host", "api.test", "--inject-as", "query", stdin=VALUE
    )
    assert no_field.returncode == 2 and "add --inject-field" in no_field.stderr
    assert all("Traceback" not in r.stderr for r in (bad_host, no_field))
