"""The child's environment, rebuilt from an allowlist instead of inherited.

Only locale and terminal variables come from the platform's own environment; PATH, HOME,
USER and SHELL are the sandbox's. A call's ``env`` is added on top, except names that
could hijack a program (loader, shell start-up, interpreter options) and anything whose
name or value looks like a secret. Credentials a skill declared are the one way a secret
reaches a command; the skills service stages them (``declared``), with the platform's own
plain variables (``variables``: an active skill's ``SKILL_DIR``…).

Dropped variables are reported by name and reason, never by value.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from corral.secrets import is_secret_name, looks_like_secret_value

__all__ = [
    "Dropped",
    "Environment",
    "build_environment",
    "call_env_problem",
    "is_hijack_name",
    "staged_problem",
]

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

_INHERITED = frozenset(
    {"LANG", "LANGUAGE", "TERM", "TZ", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES"}
)
_INHERITED_PREFIXES = ("LC_",)

_HIJACK = frozenset(
    {
        "BASH_ENV", "ENV", "PROMPT_COMMAND", "PS4", "IFS", "SHELLOPTS", "BASHOPTS", "CDPATH",
        "GLOBIGNORE", "BASH_XTRACEFD", "BASH_LOADABLES_PATH", "EXECIGNORE", "INPUTRC",
        "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONINSPECT", "PYTHONUSERBASE",
        "PYTHONWARNINGS", "PYTHONBREAKPOINT",
        "NODE_OPTIONS", "NODE_PATH", "NODE_REPL_EXTERNAL_MODULE",
        "PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB", "RUBYOPT", "RUBYLIB",
        "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH",
        "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXEC_PATH", "GIT_ASKPASS", "SSH_ASKPASS",
        "GIT_EDITOR", "GIT_PAGER", "GIT_EXTERNAL_DIFF", "GIT_PROXY_COMMAND", "GIT_TEMPLATE_DIR",
        "EDITOR", "VISUAL", "PAGER", "MANPAGER", "BROWSER", "LESSOPEN", "LESSCLOSE",
        "GCONV_PATH", "HOSTALIASES", "LOCALDOMAIN", "RES_OPTIONS", "NLSPATH", "TMPDIR",
        "LIBRARY_PATH", "CPATH", "GOFLAGS", "RUSTC_WRAPPER", "RUSTFLAGS", "CARGO_BUILD_RUSTC",
        "MAKEFLAGS", "MFLAGS", "NPM_CONFIG_USERCONFIG", "npm_config_userconfig",
    }
)  # fmt: skip
_HIJACK_PREFIXES = ("LD_", "DYLD_", "BASH_FUNC_", "GIT_CONFIG", "MALLOC_", "GLIBC_TUNABLES")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_VALUE_MAX = 32_768

Reason = Literal["invalid_name", "invalid_value", "hijack", "secret_name", "secret_value"]


def is_hijack_name(name: str) -> bool:
    """True when setting ``name`` could change which code a program runs."""
    return name in _HIJACK or name.upper() in _HIJACK or name.startswith(_HIJACK_PREFIXES)


@dataclass(frozen=True, slots=True)
class Dropped:
    name: str
    reason: Reason
    origin: Literal["platform", "call", "skill"]

    def describe(self) -> str:
        why = {
            "invalid_name": "not a valid variable name",
            "invalid_value": "value holds a NUL byte or is too long",
            "hijack": "it can change which code a program runs",
            "secret_name": "its name looks like a secret",
            "secret_value": "its value looks like a secret",
        }[self.reason]
        return f"{self.name!r} ({why})"


@dataclass(frozen=True, slots=True, kw_only=True)
class Environment:
    values: dict[str, str]
    dropped: tuple[Dropped, ...] = ()
    secrets: tuple[str, ...] = field(default=(), repr=False)
    """Declared credential values, to be redacted from captured output."""

    def call_drops(self) -> list[Dropped]:
        """What the call asked for and did not get (platform drops are routine)."""
        return [d for d in self.dropped if d.origin != "platform"]


def _judge(name: str, value: str, *, secrets_allowed: bool) -> Reason | None:
    if not _NAME.match(name):
        return "invalid_name"
    if "\x00" in value or len(value) > _VALUE_MAX:
        return "invalid_value"
    if is_hijack_name(name):
        return "hijack"
    if secrets_allowed:
        return None
    if is_secret_name(name):
        return "secret_name"
    if looks_like_secret_value(value):
        return "secret_value"
    return None


# The command's identity and shell are the platform's; a call may not set them.
_PLATFORM_OWNED = frozenset({"PATH", "HOME", "SHELL", "USER", "LOGNAME", "TMPDIR"})
# Git variables that only describe a commit or tune output; every other GIT_* may make git
# run a program, read another repository's configuration or write a file.
_GIT_SAFE = frozenset(
    {"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME",
     "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE", "GIT_TERMINAL_PROMPT", "GIT_MERGE_AUTOEDIT",
     "GIT_OPTIONAL_LOCKS", "GIT_FLUSH", "GIT_DEFAULT_HASH", "GIT_PAGER_IN_USE",
     "GIT_ADVICE", "GIT_NO_REPLACE_OBJECTS", "GIT_LITERAL_PATHSPECS"}
)  # fmt: skip
TOOLCHAIN_ROOTS = ("/usr/", "/bin", "/sbin", "/opt/", "/snap/bin", "/nix/store/")
"""Where a call's PATH may point: system folders the platform's user does not write."""
_WHY = {
    "invalid_name": "is not a valid variable name",
    "invalid_value": "has a value with a NUL byte or longer than 32 KB",
    "hijack": "can change which code a program runs",
    "secret_name": "looks like a secret by its name; pass credentials through a skill's "
    "declared credentials instead",
    "secret_value": "holds a value that looks like a secret; pass credentials through a "
    "skill's declared credentials instead",
}


def _toolchain_entry(entry: str, private: tuple[str, ...]) -> bool:
    if not entry.startswith("/") or posixpath.normpath(entry) != entry.rstrip("/") or "//" in entry:
        return False
    for path in (entry, os.path.realpath(entry)):
        if not (path in SYSTEM_PATH.split(":") or path.startswith(TOOLCHAIN_ROOTS)):
            return False
        if any(path == root or path.startswith(root.rstrip("/") + "/") for root in private):
            return False
    return True


def call_env_problem(
    env: Mapping[str, str], *, private: tuple[str, ...] = ()
) -> tuple[str, str] | None:
    """The first variable a call's ``env`` may not set, and why; ``None`` when all may.

    ``PATH`` passes only when every entry is an absolute toolchain folder (see
    :data:`TOOLCHAIN_ROOTS`) outside ``private`` (the platform's data folder).
    """
    for name, value in env.items():
        if not isinstance(value, str):
            return name, "is not a string"
        if name == "PATH":
            bad = [e for e in value.split(":") if not _toolchain_entry(e, private)]
            if bad:
                return name, (
                    f"has the entry {bad[0]!r}, which is not an absolute system toolchain "
                    "folder, so a file there could stand in for an ordinary command"
                )
            continue
        if name in _PLATFORM_OWNED:
            return name, "belongs to the platform (the command's identity and shell)"
        if name.startswith("GIT_") and name not in _GIT_SAFE:
            return name, "can make git run a program, load configuration or write a file"
        reason = _judge(name, value, secrets_allowed=False)
        if reason is not None:
            return name, _WHY[reason]
    return None


def staged_problem(name: str, value: str) -> str | None:
    """Why the platform may not stage ``name`` (a skill's credential, the run's ticket, a
    plain skill variable) for a command; ``None`` when it may. Judges the name and the
    value's shape only, never its content, so the answer never depends on a secret."""
    if not _NAME.match(name):
        return "is not a valid variable name"
    if "\x00" in value or len(value) > _VALUE_MAX:
        return _WHY["invalid_value"]
    if name in _PLATFORM_OWNED or name == "PATH":
        return "belongs to the platform (the command's identity and shell)"
    if is_hijack_name(name) or (name.startswith("GIT_") and name not in _GIT_SAFE):
        return _WHY["hijack"]
    return None


def build_environment(
    *,
    platform_env: Mapping[str, str],
    home: str,
    user: str = "corral",
    path: str = SYSTEM_PATH,
    call_env: Mapping[str, str] | None = None,
    declared: Mapping[str, str] | None = None,
    variables: Mapping[str, str] | None = None,
) -> Environment:
    """The environment of one command; ``platform_env`` is only read for allowlisted names.

    ``variables`` are plain values the platform sets (an active skill's ``SKILL_DIR``,
    ``SESSION_ID``…): they win over the call's ``env`` and are not secrets."""
    values: dict[str, str] = {}
    dropped: list[Dropped] = []
    for name, value in platform_env.items():
        if name not in _INHERITED and not name.startswith(_INHERITED_PREFIXES):
            continue
        reason = _judge(name, value, secrets_allowed=False)
        if reason is None:
            values[name] = value
        else:
            dropped.append(Dropped(name, reason, "platform"))
    values.update(
        {
            "PATH": path,
            "HOME": home,
            "USER": user,
            "LOGNAME": user,
            "SHELL": "/bin/bash",
            "TMPDIR": "/tmp",
        }
    )
    values.setdefault("LANG", "C.UTF-8")
    values.setdefault("TERM", "dumb")
    for name, value in (call_env or {}).items():
        reason = _judge(name, value, secrets_allowed=False)
        if reason is None:
            values[name] = value
        else:
            dropped.append(Dropped(name, reason, "call"))
    for name, value in (variables or {}).items():
        if staged_problem(name, value) is None:
            values[name] = value
    secrets: list[str] = []
    for name, value in (declared or {}).items():
        reason = _judge(name, value, secrets_allowed=True)
        if reason is None and staged_problem(name, value) is not None:
            reason = "hijack"  # PATH, HOME, a git hook variable: what runs, or as whom
        if reason is None:
            values[name] = value
            secrets.append(value)
        else:
            dropped.append(Dropped(name, reason, "skill"))
    return Environment(values=values, dropped=tuple(dropped), secrets=tuple(secrets))
