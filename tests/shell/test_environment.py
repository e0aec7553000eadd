"""The child's environment: an allowlist, the call's own variables, never a secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.platform import Platform
from corral.shell.environment import build_environment, is_hijack_name
from tests.shell.conftest import BWRAP

GITHUB_TOKEN_VALUE = "ghp_" + "Z" * 36
PLATFORM_SECRETS = {
    "TEST_API_TOKEN": "platform-token-value-1234",  # a secret-looking name
    "GREETING": GITHUB_TOKEN_VALUE,  # an innocent name holding a key
    "DATABASE_URL": "postgres://corral:hunter22@db.internal/corral",  # user:pass@
    "HARMLESS_SETTING": "not-on-the-allowlist",
}


def test_only_allowlisted_platform_variables_pass() -> None:
    env = build_environment(
        platform_env={"LANG": "de_DE.UTF-8", "LC_ALL": "C", "TERM": "xterm", **PLATFORM_SECRETS},
        home="/tmp/home",
    )
    assert env.values["LANG"] == "de_DE.UTF-8" and env.values["LC_ALL"] == "C"
    assert env.values["HOME"] == "/tmp/home" and env.values["USER"] == "corral"
    assert not set(PLATFORM_SECRETS) & set(env.values)
    assert env.call_drops() == []  # the platform's own drops are routine, not reported


@pytest.mark.parametrize(
    ("name", "value", "reason"),
    [
        ("DEPLOY_TOKEN", "abc", "secret_name"),
        ("db_password", "abc", "secret_name"),
        ("SESSION_ID", "abc", "secret_name"),
        ("COOKIE_JAR", "abc", "secret_name"),
        ("AWS_SECRET_ACCESS_KEY", "abc", "secret_name"),
        ("SMTP_PASS", "abc", "secret_name"),
        ("NOTE", GITHUB_TOKEN_VALUE, "secret_value"),
        ("NOTE", "sk-ant-" + "a" * 40, "secret_value"),
        ("NOTE", "AKIA" + "B" * 16, "secret_value"),
        ("NOTE", "-----BEGIN OPENSSH PRIVATE KEY-----\nabc", "secret_value"),
        ("NOTE", "https://bob:s3cret@example.org/x", "secret_value"),
        ("NOTE", "Bearer " + "x" * 30, "secret_value"),
        ("LD_PRELOAD", "/tmp/evil.so", "hijack"),
        ("BASH_ENV", "/tmp/rc", "hijack"),
        ("PYTHONPATH", "/tmp", "hijack"),
        ("GIT_SSH_COMMAND", "sh -c id", "hijack"),
        ("BASH_FUNC_ls%%", "() { id; }", "invalid_name"),
        ("1BAD", "x", "invalid_name"),
        ("NUL", "a\x00b", "invalid_value"),
    ],
)
def test_call_variables_that_look_secret_or_hijack_are_dropped(
    name: str, value: str, reason: str
) -> None:
    env = build_environment(platform_env={}, home="/h", call_env={name: value, "KEEP_ME": "yes"})
    assert name not in env.values and env.values["KEEP_ME"] == "yes"
    (dropped,) = env.call_drops()
    assert (dropped.name, dropped.reason) == (name, reason)
    assert value not in dropped.describe() or not value


def test_ordinary_names_are_not_mistaken_for_secrets() -> None:
    call = {"GIT_AUTHOR_NAME": "Ada", "KEYBOARD": "us", "NODE_ENV": "test", "CI": "1"}
    env = build_environment(platform_env={}, home="/h", call_env=call)
    assert all(env.values[k] == v for k, v in call.items())
    assert not is_hijack_name("GIT_AUTHOR_NAME") and is_hijack_name("LD_AUDIT")


def test_declared_credentials_pass_and_are_remembered_for_redaction() -> None:
    env = build_environment(
        platform_env={}, home="/h", declared={"SERVICE_TOKEN": GITHUB_TOKEN_VALUE}
    )
    assert env.values["SERVICE_TOKEN"] == GITHUB_TOKEN_VALUE
    assert env.secrets == (GITHUB_TOKEN_VALUE,)


@pytest.mark.parametrize("name", ["PATH", "HOME", "USER", "SHELL", "GIT_DIR", "GIT_SSH_COMMAND"])
def test_a_declared_credential_cannot_take_a_platform_name(name: str) -> None:
    env = build_environment(platform_env={}, home="/h", declared={name: GITHUB_TOKEN_VALUE})
    assert GITHUB_TOKEN_VALUE not in env.values.values() and env.secrets == ()
    assert [(d.name, d.origin) for d in env.call_drops()] == [(name, "skill")]


@pytest.mark.parametrize("mode", ["bubblewrap", "unconfined"])
async def test_a_platform_secret_never_reaches_env_output(
    mode: str, data_dir: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    if mode == "bubblewrap" and not BWRAP:
        pytest.skip("bubblewrap cannot run on this machine")
    import corral

    for name, value in PLATFORM_SECRETS.items():
        monkeypatch.setenv(name, value)
    async with corral.open(data_dir, sandbox=mode) as platform:  # type: ignore[arg-type]
        result = await _env(platform)
    for name, value in PLATFORM_SECRETS.items():
        assert name not in result and value not in result
    assert "hunter22" not in result and "OK_VAR=fine\n" in result


async def _env(platform: Platform) -> str:
    result = await platform.call_tool("execute", {"command": "env", "env": {"OK_VAR": "fine"}})
    assert result.data is not None and not result.data["env_dropped"]
    return result.text


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PATH", "bin:/usr/bin"),
        ("PATH", "/usr/bin:"),
        ("PATH", "/usr/bin/../../tmp"),
        ("HOME", "/tmp"),
        ("SHELL", "/tmp/sh"),
        ("LD_PRELOAD", "/tmp/evil.so"),
        ("LD_LIBRARY_PATH", "/tmp"),
        ("BASH_ENV", "/tmp/rc"),
        ("ENV", "/tmp/rc"),
        ("PROMPT_COMMAND", "touch pwned-1"),
        ("SHELLOPTS", "xtrace"),
        ("BASHOPTS", "extdebug"),
        ("PS4", "$(touch pwned-2)"),
        ("GIT_SSH_COMMAND", "sh -c pwned-3"),
        ("GIT_EXTERNAL_DIFF", "pwned-4"),
        ("GIT_DIR", "/tmp/other/.git"),
        ("GIT_CONFIG_GLOBAL", "/tmp/gitconfig"),
        ("GIT_TRACE", "/tmp/trace"),
        ("DEPLOY_TOKEN", "pwned-5"),
        ("NOTE", GITHUB_TOKEN_VALUE),
        ("BASH_FUNC_ls%%", "() { id; }"),
    ],
)
async def test_call_env_that_could_change_what_runs_is_refused_by_name(
    name: str, value: str, data_dir: Path
) -> None:
    import corral

    async with corral.open(data_dir, sandbox="unconfined") as platform:
        result = await platform.call_tool("execute", {"command": "ls", "env": {name: value}})
    assert result.is_error and result.error_code == "policy_denied"
    assert repr(name) in result.text and "env" in result.text
    assert value not in result.text or name == "PATH"


async def test_a_drive_script_named_like_a_command_is_never_on_path(data_dir: Path) -> None:
    import corral

    async with corral.open(data_dir, sandbox="unconfined") as platform:
        tools = data_dir / "drive" / "bin"
        tools.mkdir(parents=True)
        fake = tools / "ls"
        fake.write_text("#!/bin/sh\necho HIJACKED\n")
        fake.chmod(0o755)
        env = {"PATH": f"{tools}:/usr/bin:/bin"}
        result = await platform.call_tool("execute", {"command": "ls", "env": env})
        assert result.error_code == "policy_denied" and "HIJACKED" not in result.text
        assert str(tools) in result.text
        plain = await platform.call_tool(
            "execute", {"command": "ls bin", "env": {"PATH": "/usr/local/bin:/usr/bin:/bin"}}
        )
        assert not plain.is_error and "ls" in plain.text and "HIJACKED" not in plain.text


def test_platform_variables_win_over_the_call_and_are_not_secrets() -> None:
    built = build_environment(
        platform_env={},
        home="/tmp/home",
        call_env={"SKILL_DIR": "/elsewhere", "NOTE": "x"},
        declared={"WIKI_TOKEN": "wk-0123456789abcdef"},
        variables={"SKILL_DIR": "/skills/wiki", "SESSION_ID": "c_1", "LD_PRELOAD": "/x.so"},
    )
    assert built.values["SKILL_DIR"] == "/skills/wiki" and built.values["SESSION_ID"] == "c_1"
    assert built.values["NOTE"] == "x" and built.values["WIKI_TOKEN"] == "wk-0123456789abcdef"
    assert "LD_PRELOAD" not in built.values  # even the platform's own may not hijack
    assert built.secrets == ("wk-0123456789abcdef",)
