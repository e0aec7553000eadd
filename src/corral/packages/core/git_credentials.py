"""Stored credentials of connected git remotes, handed to git inside ``execute`` only.

``connect`` writes, next to each remote with a named credential, a ``credential.<url>.helper``
into the repository's config: an inline helper that answers git's ``get`` with the value of
one environment variable, and nothing when that variable is unset. Nothing in the repository's
files holds the token, and the helper text is fixed by the platform (commands cannot write
``.git/config``: the analyser refuses it).

For each ``execute`` call that runs ``git`` in (or above) a drive repository with connected
remotes, :func:`staged_tokens` looks each remote's credential up as the calling user and
stages it under that variable for this call only, the way a skill's declared credentials are
staged: it passes the environment's secret filter, the runner redacts it from live frames and
results, and the credential store teaches the kernel's redactor the value for rows and logs.
A credential that names inject hosts is never staged: the variable holds its placeholder,
which the egress proxy (network mode proxy) swaps for the token on TLS to a bound host.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from corral.connect import CredentialStore, InjectedCredential
from corral.errors import CorralError
from corral.policy.identity import Caller
from corral.policy.sources import SourcePolicy

__all__ = [
    "HELPER_USERNAME",
    "helper_command",
    "helper_url",
    "mentions_git",
    "staged_tokens",
    "token_variable",
]

HELPER_USERNAME = "x-access-token"
"""The user name the helper answers: forges that take a token as the password ignore it."""

_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
_GIT_WORD = re.compile(r"(?<![\w./-])git(?![\w.-])")


def mentions_git(command: str) -> bool:
    """Whether ``command`` names the ``git`` program anywhere (only those get tokens)."""
    return _GIT_WORD.search(command) is not None


def token_variable(remote: str) -> str:
    """The environment variable carrying remote ``remote``'s token during one call."""
    digest = hashlib.sha256(remote.encode()).hexdigest()[:8]
    return f"CORRAL_GIT_TOKEN_{re.sub(r'[^A-Za-z0-9]', '_', remote).upper()}_{digest}"


def helper_command(remote: str) -> str:
    """The ``credential.<url>.helper`` value for ``remote``: git runs it through ``sh``."""
    variable = token_variable(remote)
    return (
        f'!f() {{ if test "$1" = get && test -n "${variable}"; then '
        f"printf 'username={HELPER_USERNAME}\\npassword=%s\\n' \"${variable}\"; fi; }}; f"
    )


def helper_url(url: str) -> bool:
    """Whether a remote at ``url`` may be handed a token: https, or http on loopback only
    (plain http elsewhere would send it in the clear)."""
    parts = urlsplit(url)
    return parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in _LOOPBACK)


def _related(cwd: Path, repo: Path) -> bool:
    return cwd == repo or repo in cwd.parents or cwd in repo.parents


async def staged_tokens(
    *,
    remotes: Sequence[dict[str, Any]],
    credentials: CredentialStore | None,
    caller: Caller,
    policy: SourcePolicy,
    cwd: str | None,
    command: str,
) -> dict[str, str]:
    """Variable → token for the connected remotes (``GitRemotes.rows``) this git command may
    push to or fetch from.

    Only a command that names ``git`` gets any; only remotes whose repository holds the
    command's folder (or lies inside it); only credentials the caller may read.
    """
    if not remotes or credentials is None or not mentions_git(command):
        return {}
    try:
        where = policy.resolve(cwd).path if cwd else policy.data_root
    except CorralError:
        return {}  # the shell service's own check names what is wrong with the cwd
    staged: dict[str, str] = {}
    injected: dict[str, InjectedCredential] | None = None
    for row in remotes:
        if not row["credential"] or not helper_url(str(row["url"])):
            continue
        try:
            repo = policy.resolve(str(row["repo"])).path
        except CorralError:
            continue
        if not _related(Path(where), Path(repo)):
            continue
        name = str(row["credential"])
        if injected is None:
            injected = {c.name: c for c in await credentials.injected(user_id=caller.user_id)}
        if name in injected:
            # Injected by the egress proxy: the command only ever holds the stand-in.
            from corral.packages.core.egress_credentials import binding_of
            from corral.shell.egress.credentials import placeholder

            staged[token_variable(str(row["name"]))] = placeholder(binding_of(injected[name]))
            continue
        value = await credentials.lookup(name, user_id=caller.user_id)
        # A line break would let the value add lines to git's credential answer.
        if value and "\n" not in value and "\r" not in value:
            staged[token_variable(str(row["name"]))] = value
    return staged
