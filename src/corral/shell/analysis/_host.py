"""Host-level commands: signals beyond the command's own processes, and changes to the
machine's network, clock, name, schedules, services and priorities.

Inside the sandbox most of these reach nothing, but they are never an agent's task, and
without the sandbox they act on the host and the platform itself. Read-only forms
(``ip addr``, ``date +%F``, ``crontab -l``, ``systemctl status``) pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence

from corral.shell.analysis._refusal import refuse
from corral.shell.analysis._words import ResolvedWord

__all__ = ["HOST_CHECKS", "check_host", "check_kill"]

Words = Sequence[ResolvedWord]

OWN_PID_WORDS = frozenset({"$!", "${!}", '"$!"', '"${!}"', "$$", "${$}", '"$$"', '"${$}"'})
"""Words that stand for a process of the command itself (its last job, its shell)."""
_OWN_TARGETS = OWN_PID_WORDS
_VARIABLE = re.compile(r'^"?\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?"?$')
_KILL_ARG_OPTIONS = frozenset({"-s", "-n", "--signal"})


def _host(word: ResolvedWord, what: str) -> None:
    refuse(
        "host_control",
        word.text,
        f"{what}; that acts on the machine rather than on the project, and is never an "
        "agent's task. Do the work without it or ask a person to do it.",
    )


def _operands(argv: Words) -> list[ResolvedWord]:
    return [w for w in argv[1:] if not (w.value or "x").startswith("-")]


def check_kill(argv: Words, *, unconfined: bool, own: Collection[str] = ()) -> None:
    """``kill``: only the command's own processes (literal pids, ``$!``, ``$$``, ``%job``,
    or a variable in ``own`` that was set to one of them)."""
    args = list(argv[1:])
    i = 0
    if args and (args[0].value or "").startswith("-") and args[0].value != "--":
        if args[0].value in ("-l", "-L", "--list", "--table"):
            return
        i = 2 if args[0].value in _KILL_ARG_OPTIONS else 1
    if i < len(args) and args[i].value == "--":
        i += 1
    for word in args[i:]:
        value = word.value
        if value is None:
            variable = _VARIABLE.match(word.text)
            if word.text in _OWN_TARGETS or not unconfined:
                continue
            if variable is not None and variable.group(1) in own:
                continue
            refuse(
                "dangerous_kill",
                word.text,
                f"The process {word.text!r} is only known when the command runs, and without "
                "the sandbox it could be any process on the host, the platform included; "
                "signal literal process ids of your own jobs ($! or %1).",
            )
        if value.startswith("%") or value == "0" or (value.isdigit() and value != "1"):
            continue
        what = "init (process 1)" if value == "1" else "every process or a process group"
        if value == "-1":
            what = "every process you may signal, the platform included"
        refuse(
            "dangerous_kill",
            word.text,
            f"kill {value} signals {what}; name the process ids to stop instead.",
        )


def _by_pattern(argv: Words) -> None:
    _host(argv[0], f"{argv[0].value} signals processes by name, the platform's included")


def _fuser(argv: Words) -> None:
    for word in argv[1:]:
        value = word.value or ""
        if value.startswith("-") and not value.startswith("--") and "k" in value:
            _host(word, "fuser -k kills every process using a file")
        if value == "--kill":
            _host(word, "fuser --kill kills every process using a file")


_IP_CHANGES = frozenset(
    {"add", "del", "delete", "set", "change", "replace", "flush", "append", "prepend", "exec",
     "attach", "detach", "up", "down", "restore", "save", "update", "reset", "create"}
)  # fmt: skip


def _ip(argv: Words) -> None:
    for word in argv[1:]:
        if word.value in _IP_CHANGES:
            _host(word, f"ip {word.value} changes the machine's network")


def _ifconfig(argv: Words) -> None:
    if len(_operands(argv)) >= 2:
        _host(argv[2], "ifconfig with settings changes a network interface")


def _verbs(verbs: frozenset[str], what: str) -> Callable[[Words], None]:
    def check(argv: Words) -> None:
        for word in argv[1:]:
            value = word.value
            if value is not None and (value in verbs or value.lstrip("-") in verbs):
                _host(word, f"{argv[0].value} {value} {what}")

    return check


def _date(argv: Words) -> None:
    for word in argv[1:]:
        value = word.value or ""
        if value in ("--set", "--se", "--s") or value.startswith(("--set=", "--s=", "--se=")):
            _host(word, "date --set changes the machine's clock")
        if value.startswith("-") and not value.startswith("--"):
            for ch in value[1:]:
                if ch == "s":
                    _host(word, "date -s changes the machine's clock")
                if ch in "dfIr":
                    break
    for word in _operands(argv):
        if not (word.value or "+").startswith("+"):
            _host(word, "date with a time operand changes the machine's clock")


def _hostname(argv: Words) -> None:
    for word in argv[1:]:
        value = word.value or ""
        if value in ("-F", "--file", "-b", "--boot") or value.startswith("--file="):
            _host(word, "hostname -F changes the machine's name")
    operands = _operands(argv)
    if operands:
        _host(operands[0], "hostname NAME changes the machine's name")


def _crontab(argv: Words) -> None:
    listing = any(w.value == "-l" for w in argv[1:])
    for word in argv[1:]:
        if word.value in ("-r", "-e", "-i", "-n", "-c"):
            _host(word, f"crontab {word.value} changes scheduled jobs on the machine")
    if not listing:
        _host(argv[-1], "crontab without -l installs a schedule on the machine")


def _renice(argv: Words) -> None:
    for word in argv[1:]:
        if word.value in ("-g", "--pgrp", "-u", "--user"):
            _host(word, "renice of whole groups or users changes other processes' priority")
    operands = _operands(argv)
    priority = next((w for w in operands if (w.value or "").lstrip("+").isdigit()), None)
    for word in operands:
        if word is not priority and word.text not in _OWN_TARGETS:
            _host(word, "renice of another process changes its priority")


def _service(argv: Words) -> None:
    operands = _operands(argv)
    if len(operands) >= 2:
        _host(operands[1], f"service {operands[0].text} {operands[1].text} controls a host service")


_SYSTEMCTL_CHANGES = frozenset(
    {"start", "stop", "restart", "reload", "try-restart", "reload-or-restart",
     "try-reload-or-restart", "kill", "clean", "freeze", "thaw", "mask", "unmask", "enable",
     "disable", "reenable", "preset", "preset-all", "link", "revert", "edit", "set-property",
     "set-environment", "unset-environment", "import-environment", "daemon-reload",
     "daemon-reexec", "set-default", "add-wants", "add-requires", "reset-failed", "bind",
     "mount-image", "log-level", "log-target", "service-watchdogs", "condreload",
     "condrestart", "condstop", "force-reload", "exit"}
)  # fmt: skip
_LOGINCTL_CHANGES = frozenset(
    {"terminate-session", "terminate-user", "terminate-seat", "kill-session", "kill-user",
     "lock-session", "lock-sessions", "unlock-session", "unlock-sessions", "enable-linger",
     "disable-linger", "attach", "flush-devices", "activate"}
)  # fmt: skip


HOST_CHECKS: dict[str, Callable[[Words], None]] = {
    "pkill": _by_pattern,
    "killall": _by_pattern,
    "skill": _by_pattern,
    "snice": _by_pattern,
    "fuser": _fuser,
    "ip": _ip,
    "ifconfig": _ifconfig,
    "route": _verbs(frozenset({"add", "del", "delete", "flush"}), "changes the routing table"),
    "nmcli": _verbs(
        frozenset(
            {
                "up",
                "down",
                "delete",
                "modify",
                "add",
                "connect",
                "disconnect",
                "off",
                "on",
                "reload",
                "reapply",
                "set-hostname",
                "import",
                "edit",
            }
        ),
        "changes the machine's network",
    ),
    "date": _date,
    "hostname": _hostname,
    "hostnamectl": _verbs(
        frozenset(
            {
                "set-hostname",
                "hostname",
                "set-icon-name",
                "icon-name",
                "set-chassis",
                "chassis",
                "set-deployment",
                "deployment",
                "set-location",
                "location",
            }
        ),
        "changes the machine's name",
    ),
    "timedatectl": _verbs(
        frozenset({"set-time", "set-timezone", "set-local-rtc", "set-ntp", "ntp-servers"}),
        "changes the machine's clock",
    ),
    "crontab": _crontab,
    "renice": _renice,
    "service": _service,
    "systemctl": _verbs(_SYSTEMCTL_CHANGES, "controls the machine's services"),
    "loginctl": _verbs(_LOGINCTL_CHANGES, "controls the machine's sessions"),
    "udevadm": _verbs(frozenset({"trigger", "control", "settle"}), "drives the device manager"),
}
"""Programs whose changing forms act on the host; each check refuses those forms."""


def check_host(base: str, argv: Words) -> None:
    """Refuse the host-changing forms of ``base`` (see :data:`HOST_CHECKS`)."""
    check = HOST_CHECKS.get(base)
    if check is not None:
        check(argv)
