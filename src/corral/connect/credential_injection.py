"""Where a stored credential may be injected by the egress proxy, and how it is sent there.

A credential with ``inject_hosts`` never enters a sandbox: commands get a placeholder of
the same shape and the proxy swaps in the value on a TLS connection to one of those hosts
(:mod:`corral.shell.egress.credentials`). ``inject_as`` says where the value travels:
``header`` (``Authorization`` unless ``field`` names another header), ``query`` (the
parameter ``field``) or ``basic`` (the password of HTTP basic auth, as git sends it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from corral.errors import UsageError

__all__ = ["INJECT_AS", "InjectAs", "Injection", "check_inject_host", "injection"]

InjectAs = Literal["header", "query", "basic"]
INJECT_AS: tuple[InjectAs, ...] = ("header", "query", "basic")

_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_HOST = re.compile(rf"^(\*\.)?({_LABEL}\.)+{_LABEL}$")
_FIELD = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")


@dataclass(frozen=True, slots=True, kw_only=True)
class Injection:
    """The hosts a credential is for and how it is sent to them."""

    hosts: tuple[str, ...]
    inject_as: InjectAs
    field: str = ""


def check_inject_host(host: str) -> str:
    """``host`` lowercased when it is a host name or ``*.domain`` wildcard, else UsageError."""
    cleaned = host.strip().lower().rstrip(".")
    if len(cleaned) > 253 or not _HOST.match(cleaned):
        raise UsageError(
            f"inject host {host!r} is not a host name; give a name such as 'github.com' or a "
            "wildcard such as '*.example.com' (no scheme, port or path)"
        )
    return cleaned


def injection(hosts: Sequence[str], inject_as: str, field: str = "") -> Injection | None:
    """The checked injection of a credential, or None when no host is named."""
    if not hosts:
        if inject_as != "header" or field:
            raise UsageError(
                "--inject-as and --inject-field say how a credential is sent to the hosts of "
                "--inject-host; name at least one host (for example --inject-host github.com)"
            )
        return None
    if inject_as not in INJECT_AS:
        raise UsageError(
            f"--inject-as {inject_as!r} is not known; use one of {', '.join(INJECT_AS)}"
        )
    if inject_as == "query" and not field:
        raise UsageError(
            "a credential sent as a query parameter needs the parameter's name; "
            "add --inject-field (for example --inject-field api_key)"
        )
    if inject_as == "basic" and field:
        raise UsageError(
            "basic auth always travels in the Authorization header; leave out --inject-field"
        )
    if field and not _FIELD.match(field):
        raise UsageError(
            f"--inject-field {field!r} is not a header or parameter name; use letters, digits "
            "and '-', '_' or '.' (for example X-Api-Key)"
        )
    checked = tuple(dict.fromkeys(check_inject_host(host) for host in hosts))
    kind: InjectAs = (
        "query" if inject_as == "query" else "basic" if inject_as == "basic" else "header"
    )
    return Injection(hosts=checked, inject_as=kind, field=field)
