"""What a command does to files: which arguments it writes, which it reads, which are not
paths at all (patterns, code, option values), and which strings it hands to a shell.

Unknown programs get the default: every path-looking operand is read.
"""

from __future__ import annotations

from corral.shell.analysis._fileops import FILE_OPERATIONS
from corral.shell.analysis._scan import Effects
from corral.shell.analysis._toolops import TOOLS
from corral.shell.analysis._toolops import interpreter as _interpreter
from corral.shell.analysis._words import ResolvedWord

__all__ = ["TEXT_COMMANDS", "Effects", "effects"]

# Builtins and utilities whose arguments are text, never paths.
TEXT_COMMANDS = frozenset(
    {"echo", "printf", "true", "false", ":", "expr", "seq", "sleep", "yes", "let", "return",
     "exit", "shift", "set", "shopt", "type", "which", "hash", "alias", "unalias", "wait",
     "jobs", "bg", "fg", "kill", "pkill", "killall", "read", "export", "declare", "typeset",
     "local", "readonly", "unset", "trap", "getopts", "break", "continue", "caller", "ulimit",
     "umask", "times", "dirs", "disown", "suspend", "logout", "enable", "help", "compgen",
     "complete", "compopt", "bind", "history", "mapfile", "readarray", "pwd", "whoami", "id",
     "uname", "hostname", "date", "env", "printenv", "nproc", "tty", "basename", "dirname"}
)  # fmt: skip


def _text(argv: list[ResolvedWord]) -> Effects:
    return Effects(text_only=True, skip=set(range(1, len(argv))))


def effects(name: str, argv: list[ResolvedWord], *, interpreter: bool = False) -> Effects:
    """The file effects of ``argv`` whose resolved program name is ``name``."""
    if name in TEXT_COMMANDS:
        return _text(argv)
    handler = FILE_OPERATIONS.get(name) or TOOLS.get(name)
    if handler is not None:
        return handler(argv)
    if interpreter:
        return _interpreter(argv)
    return Effects()
