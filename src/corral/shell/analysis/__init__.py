"""Static analysis of bash command lines for the ``execute`` tool.

:func:`analyze` parses a command with tree-sitter-bash and walks every command wherever
it stands (lists, pipelines, subshells, functions, substitutions, here-documents fed to a
shell, ``bash -c`` strings four levels deep), after resolving quoting, escapes and wrapper
prefixes. It refuses what must never run and extracts, for the URI-policy gate, every
command with its arguments, write targets, read paths, redirects and ``cd`` moves.

This layer is defence in depth: the kernel sandbox is the boundary.
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
