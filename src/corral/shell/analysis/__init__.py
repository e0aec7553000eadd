"""Static analysis of bash command lines for the ``execute`` tool.

:func:`analyze` parses a command with tree-sitter-bash and walks every command wherever
it stands (lists, pipelines, subshells, functions, substitutions, here-documents fed to a
shell, ``bash -c`` strings four levels deep), after resolving quoting, escapes and wrapper
prefixes. It refuses what must never run and extracts, for the URI-policy gate, every
command with its arguments, write targets, read paths, redirects and ``cd`` moves.

It also follows what bash evaluates out of sight: array subscripts, options that run a
command string (``tar --to-command``, ``sed 's/x/y/e'``…), inline interpreter code, the
dynamic loader and multi-call binaries, and files the command writes and then runs
(scripts, ``.git/config`` and hooks, makefiles). With the sandbox this layer is defence in
depth; with ``unconfined=True`` it is the boundary: what it cannot know statically is
refused, and so is code it cannot read at all (inline interpreter code, scripts and build
files on disk) unless the admin's ``allowed_invocations`` name the invocation (see
:mod:`corral.shell.analysis._unreadable`).
"""

from corral.shell.analysis._analyze import MAX_COMMAND_BYTES, analyze
from corral.shell.analysis._types import (
    RULES,
    Access,
    Analysis,
    CdMove,
    Chain,
    Command,
    PathRef,
    Redirect,
    Rule,
    Word,
    resolve_chain,
)
from corral.shell.analysis._walker import MAX_DEPTH

__all__ = [
    "MAX_COMMAND_BYTES",
    "MAX_DEPTH",
    "RULES",
    "Access",
    "Analysis",
    "CdMove",
    "Chain",
    "Command",
    "PathRef",
    "Redirect",
    "Rule",
    "Word",
    "analyze",
    "resolve_chain",
]
