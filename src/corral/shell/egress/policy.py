"""Which hosts, methods and paths a sandboxed command may reach through the egress proxy.

An admin sets the live setting ``egress``, a JSON object::

    {"allowed_domains": ["pypi.org", "*.pythonhosted.org",
                         {"domain": "github.com", "methods": ["GET"]},
                         {"domain": "github.com", "methods": ["POST"],
                          "paths": ["/acme/app.git/git-receive-pack"]}],
     "denied_domains": ["evil.example.com"],
     "unmatched": "refuse",
     "allowed_private_hosts": ["git.internal"],
     "agents": {"builder": {...}}, "workflows": {...}, "profiles": {...}}

The top level is the default; a section under ``workflows``, ``agents`` or ``profiles``
replaces it whole for that workflow, agent or profile (most specific first: a shell call of
a workflow run takes its workflow's section, keyed by the workflow's id or its title, before
its agent's and its profile's).
``allowed_private_hosts`` is admin-wide: those names may resolve to loopback or private
addresses. ``*.example.com`` matches every subdomain of example.com, not example.com
itself. Denied domains are checked first; a raw IP address is never allowed; a domain
entry may be repeated with different ``methods``/``paths`` (a request passes when any
entry for its host allows it). Paths are globs: ``*`` within one segment, ``**`` across.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from ipaddress import ip_address
from typing import Any, Literal

from corral.errors import UsageError

__all__ = [
    "DomainRule",
    "EgressPolicy",
    "HostDecision",
    "check_egress_setting",
    "egress_policy_for",
    "normalise_host",
]

Unmatched = Literal["refuse", "ask"]
DEFAULT_PORTS = (80, 443)
_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")
_METHOD = re.compile(r"^[A-Z]{1,20}$")
_POLICY_KEYS = frozenset({"allowed_domains", "denied_domains", "unmatched", "ports"})
_TOP_KEYS = _POLICY_KEYS | {"allowed_private_hosts", "agents", "workflows", "profiles"}
_ENTRY_KEYS = frozenset({"domain", "methods", "paths", "ports"})


@dataclass(frozen=True, slots=True, kw_only=True)
class HostDecision:
    """Whether a connection (or one request inside it) may go out, and which rule said so."""

    allowed: bool
    rule: str
    reason: str
    intercept: bool = False
    """True when the proxy must see inside TLS: the domain has method/path rules or a bound
    credential."""
    ask: bool = False
    """Refused for now, but the policy says an unmatched domain may be asked about."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DomainRule:
    pattern: str
    methods: frozenset[str] = frozenset()
    paths: tuple[str, ...] = ()
    ports: tuple[int, ...] = DEFAULT_PORTS

    @property
    def restricts(self) -> bool:
        return bool(self.methods or self.paths)

    def matches(self, host: str) -> bool:
        return _matches(self.pattern, host)

    def permits(self, method: str, path: str) -> bool:
        if self.methods and method.upper() not in self.methods:
            return False
        bare = path.split("?", 1)[0].split("#", 1)[0] or "/"
        return not self.paths or any(_glob(p).fullmatch(bare) for p in self.paths)

    def describe(self) -> str:
        parts = [self.pattern]
        if self.methods:
            parts.append("methods " + ",".join(sorted(self.methods)))
        if self.paths:
            parts.append("paths " + ",".join(self.paths))
        return " ".join(parts)


def _glob(pattern: str) -> re.Pattern[str]:
    out = []
    for piece in re.split(r"(\*\*|\*)", pattern):
        out.append(".*" if piece == "**" else "[^/]*" if piece == "*" else re.escape(piece))
    return re.compile("".join(out))


def _matches(pattern: str, host: str) -> bool:
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])
    return host == pattern


def normalise_host(host: str) -> str:
    """Lowercase, no trailing dot, IDNA-encoded; raises ValueError for what is not a name."""
    name = host.strip().rstrip(".").lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    try:
        name = name.encode("idna").decode("ascii")
    except UnicodeError:
        raise ValueError(f"{host!r} is not a valid host name") from None
    return name


def _is_ip(host: str) -> bool:
    try:
        ip_address(host)
    except ValueError:
        return False
    return True


@dataclass(frozen=True, slots=True, kw_only=True)
class EgressPolicy:
    allowed: tuple[DomainRule, ...] = ()
    denied: tuple[str, ...] = ()
    unmatched: Unmatched = "refuse"
    allowed_private_hosts: frozenset[str] = frozenset()
    credential_hosts: frozenset[str] = frozenset()
    """Hosts a stored credential is bound to (set by the credential side): intercepted;
    ``*.domain`` matches the names below it, as the credential's own hosts do."""
    remembered: frozenset[str] = field(default_factory=frozenset)
    """Hosts allowed by an answered question (remembered for the agent)."""
    ports: tuple[int, ...] = DEFAULT_PORTS
    """The section's ports: those of remembered hosts and of the ones an ``ask`` asks about."""

    @property
    def permits_anything(self) -> bool:
        """Whether a connection could ever be allowed (else the proxy is not worth starting)."""
        return bool(self.allowed or self.remembered) or self.unmatched == "ask"

    def with_remembered(self, hosts: Iterable[str]) -> EgressPolicy:
        """Also allow ``hosts`` (answered approvals), without method or path rules."""
        added = frozenset(normalise_host(h) for h in hosts)
        return dataclasses.replace(self, remembered=self.remembered | added)

    def with_credential_hosts(self, hosts: Iterable[str]) -> EgressPolicy:
        """Hosts a stored credential is bound to: their tunnels are intercepted."""
        added = frozenset(normalise_host(h) for h in hosts)
        return dataclasses.replace(self, credential_hosts=self.credential_hosts | added)

    def decide_host(self, host: str, port: int) -> HostDecision:
        """May a connection to ``host``:``port`` go out (before any request is seen)?"""
        try:
            name = normalise_host(host)
        except ValueError as exc:
            return HostDecision(allowed=False, rule="bad_host", reason=str(exc))
        for pattern in self.denied:
            if _matches(pattern, name):
                return HostDecision(
                    allowed=False,
                    rule=f"denied_domains: {pattern}",
                    reason=f"{name} is in the denied domains ({pattern})",
                )
        if _is_ip(name):
            return HostDecision(
                allowed=False,
                rule="raw_ip",
                reason=f"{name} is a raw IP address; egress is allowed by domain name only",
            )
        rules = [r for r in self.allowed if r.matches(name)]
        if not rules:
            if name in self.remembered and port in self.ports:
                return HostDecision(
                    allowed=True,
                    rule="remembered for the agent",
                    reason=f"{name} was allowed for this agent when a command asked",
                )
            return HostDecision(
                allowed=False,
                rule="unmatched",
                reason=f"{name} matches no allowed domain of the egress policy",
                ask=self.unmatched == "ask",
            )
        if not any(port in r.ports for r in rules):
            ports = sorted({p for r in rules for p in r.ports})
            return HostDecision(
                allowed=False,
                rule=f"allowed_domains: {rules[0].pattern} (ports)",
                reason=f"port {port} of {name} is not allowed (allowed: {ports})",
            )
        restricted = all(r.restricts for r in rules)
        return HostDecision(
            allowed=True,
            rule=f"allowed_domains: {rules[0].describe()}",
            reason=f"{name} is allowed",
            intercept=restricted or any(_matches(h, name) for h in self.credential_hosts),
        )

    def decide_request(
        self, host: str, method: str, path: str, *, port: int = DEFAULT_PORTS[1]
    ) -> HostDecision:
        """May one request (seen inside TLS, or plain HTTP) go out?"""
        first = self.decide_host(host, port)
        if not first.allowed:
            return first
        name = normalise_host(host)
        rules = [r for r in self.allowed if r.matches(name)]
        if not rules:  # approved by an answer: no method or path rules apply
            return first
        for rule in rules:
            if rule.permits(method, path):
                return HostDecision(
                    allowed=True,
                    rule=f"allowed_domains: {rule.describe()}",
                    reason=f"{method} {path} on {name} is allowed",
                    intercept=first.intercept,
                )
        shown = "; ".join(r.describe() for r in rules)
        return HostDecision(
            allowed=False,
            rule=f"allowed_domains: {shown}",
            reason=f"{method} {path.split('?', 1)[0]} on {name} is not allowed by the rules "
            f"for that domain ({shown})",
            intercept=first.intercept,
        )


# -- parsing ----------------------------------------------------------------------------


def _fail(where: str, problem: str) -> UsageError:
    return UsageError(
        f"live setting 'egress'{where}: {problem}. See the README section on egress for the "
        "shape: allowed_domains, denied_domains, unmatched, allowed_private_hosts, agents."
    )


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(where, "must be a list of strings")
    return list(value)


def _pattern(value: str, where: str) -> str:
    text = value.strip().lower().rstrip(".")
    wildcard = text.startswith("*.")
    body = text[2:] if wildcard else text
    labels = body.split(".")
    if not body or not all(_LABEL.match(label) for label in labels):
        raise _fail(where, f"{value!r} is not a domain or a '*.domain' wildcard")
    if wildcard and len(labels) < 2:
        raise _fail(where, f"{value!r} is too broad: a wildcard needs at least two labels")
    return text


def _ports(value: Any, where: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not value:
        raise _fail(where, "ports must be a non-empty list of port numbers")
    for port in value:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise _fail(where, f"{port!r} is not a port number")
    return tuple(value)


def _entry(value: Any, where: str, ports: tuple[int, ...]) -> DomainRule:
    if isinstance(value, str):
        return DomainRule(pattern=_pattern(value, where), ports=ports)
    if not isinstance(value, dict) or "domain" not in value:
        raise _fail(where, "an entry is a domain string or an object with 'domain'")
    unknown = set(value) - _ENTRY_KEYS
    if unknown:
        raise _fail(where, f"unknown keys {sorted(unknown)} (known: {sorted(_ENTRY_KEYS)})")
    domain = value["domain"]
    if not isinstance(domain, str):
        raise _fail(where, "'domain' must be a string")
    methods = [m.upper() for m in _strings(value.get("methods", []), f"{where}.methods")]
    bad = [m for m in methods if not _METHOD.match(m)]
    if bad:
        raise _fail(where, f"{bad} are not HTTP methods")
    paths = _strings(value.get("paths", []), f"{where}.paths")
    if any(not p.startswith("/") for p in paths):
        raise _fail(where, "every path starts with '/'")
    return DomainRule(
        pattern=_pattern(domain, where),
        methods=frozenset(methods),
        paths=tuple(paths),
        ports=_ports(value["ports"], where) if "ports" in value else ports,
    )


def _section(value: Any, where: str, private: frozenset[str]) -> EgressPolicy:
    if not isinstance(value, dict):
        raise _fail(where, "must be a JSON object")
    allowed_keys = _TOP_KEYS if not where else _POLICY_KEYS
    unknown = set(value) - allowed_keys
    if unknown:
        raise _fail(where, f"unknown keys {sorted(unknown)} (known: {sorted(allowed_keys)})")
    ports = _ports(value["ports"], where) if "ports" in value else DEFAULT_PORTS
    raw = value.get("allowed_domains", [])
    if not isinstance(raw, list):
        raise _fail(f"{where}.allowed_domains", "must be a list")
    allowed = tuple(_entry(v, f"{where}.allowed_domains[{i}]", ports) for i, v in enumerate(raw))
    denied = tuple(
        _pattern(v, f"{where}.denied_domains")
        for v in _strings(value.get("denied_domains", []), f"{where}.denied_domains")
    )
    unmatched = value.get("unmatched", "refuse")
    if unmatched not in ("refuse", "ask"):
        raise _fail(f"{where}.unmatched", f"must be 'refuse' or 'ask', not {unmatched!r}")
    return EgressPolicy(
        allowed=allowed,
        denied=denied,
        unmatched=unmatched,
        allowed_private_hosts=private,
        ports=ports,
    )


def _private(value: Mapping[str, Any]) -> frozenset[str]:
    names = _strings(value.get("allowed_private_hosts", []), ".allowed_private_hosts")
    return frozenset(_pattern(n, ".allowed_private_hosts") for n in names)


def check_egress_setting(value: Any) -> None:
    """Raise :class:`UsageError` naming what is wrong with a new value of ``egress``."""
    if not isinstance(value, dict):
        raise _fail("", "must be a JSON object")
    private = _private(value)
    _section(value, "", private)
    for group in ("agents", "workflows", "profiles"):
        sections = value.get(group, {})
        if not isinstance(sections, dict):
            raise _fail(f".{group}", "must be an object of name to policy")
        for name, section in sections.items():
            _section(section, f".{group}.{name}", private)


def egress_policy_for(
    value: Mapping[str, Any],
    *,
    agent: str | None = None,
    workflow: str | Sequence[str] | None = None,
    profile: str | None = None,
) -> EgressPolicy:
    """The policy for one call: its workflow's, agent's or profile's section, else the top.

    ``workflow`` may be the names a workflow goes by (its id, then its title): the first
    with a section wins."""
    private = _private(value)
    workflows = (workflow,) if isinstance(workflow, str) else tuple(workflow or ())
    candidates: list[tuple[str, str | None]] = [("workflows", name) for name in workflows]
    candidates += [("agents", agent), ("profiles", profile)]
    for group, name in candidates:
        sections = value.get(group) or {}
        if name is not None and name in sections:
            return _section(sections[name], f".{group}.{name}", private)
    return _section(value, "", private)
