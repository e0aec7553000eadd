"""Commands the analysis proves cannot write: they need no checkpoint."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corral.shell.analysis import Analysis

READERS = frozenset(
    {
        "basename", "cat", "cut", "df", "diff", "dirname", "du", "echo", "false", "file",
        "grep", "head", "id", "less", "ls", "md5sum", "more", "printf", "pwd", "readlink",
        "realpath", "rg", "sha256sum", "sort", "stat", "tail", "test", "tr", "tree", "true",
        "uname", "uniq", "wc", "which", "whoami", "[",
    }
)  # fmt: skip
"""Programs that only read whatever their arguments; a sort with ``-o`` writes through a
path the analysis marks as written, which the check below catches."""

GIT_READERS = frozenset({"log", "show", "rev-parse", "ls-files", "blame", "cat-file"})
"""git subcommands that never write (``status`` and ``diff`` may refresh the index)."""


def _reads_only(name: str, words: list[str | None]) -> bool:
    if name in READERS:
        return True
    if name == "git":
        subcommand = next((w for w in words[1:] if w is None or not w.startswith("-")), None)
        return subcommand in GIT_READERS
    return False


def _writes(access: str, path: str | None) -> bool:
    return access == "write" and path != "/dev/null"


def proven_read_only(analysis: Analysis | None) -> bool:
    """True only when every command the analysis found is a known reader, with no path or
    redirect it writes and no argument that arrives at run time."""
    if analysis is None or not analysis.allowed or not analysis.commands:
        return False
    for command in analysis.commands:
        # ``mutating`` is not asked: a reader is marked so for any output redirect, even to
        # /dev/null; what it writes is in its paths and redirects, checked here.
        if command.dynamic_args or command.function:
            return False
        if any(_writes(ref.access, ref.path) for ref in command.paths):
            return False
        if any(_writes(r.access, r.target.value) for r in command.redirects):
            return False
        if not _reads_only(command.name, [word.value for word in command.argv]):
            return False
    return not any(_writes(ref.access, ref.path) for ref in analysis.paths)
