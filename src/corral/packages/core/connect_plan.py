"""The connect control plane: a call's steps, checked all at once, then applied in order.

:func:`plan` turns the arguments into steps in the fixed order remove → add → check →
authorize and checks every input and every grant of every step before anything is written;
one problem anywhere means nothing runs. :func:`apply` then runs them; a refusal while
applying keeps what was done and names it. ``list`` answers per kind, each refused kind on
its own. Every answer is a projection: names, states, ``hasValue``, descriptors — never a
secret value, a creator id, a path, a command line or raw configuration.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from corral.connect import CredentialStore, Scope
from corral.connect.credentials import NAME_PATTERN
from corral.connect.mcp_roots import roots_for
from corral.errors import FeatureMissing, InvalidArguments, ToolError, UsageError
from corral.packages.core.connect_channel import ChannelConnect
from corral.packages.core.connect_git import GitRemotes
from corral.packages.core.connect_sources import SourceMounts
from corral.packages.core.mcp_servers import McpServers, McpServerSpec, McpServerView
from corral.policy.identity import Caller
from corral.policy.sources import SourcePolicy

__all__ = ["KIND_GRANTS", "Plane", "Step", "apply", "list_kind", "plan"]

Verb = Literal["remove", "add", "check", "authorize"]
VERBS: tuple[Verb, ...] = ("remove", "add", "check", "authorize")
KIND_GRANTS: dict[str, str] = {
    "credential": "credentials.self",
    "mcp": "mcp.connect",
    "source": "sources.read",
    "git": "git.connect",
    "channel": "channels.connect",
}
ADMIN = "admin.settings"
MOUNT = "sources.mount"
CREDENTIAL_DESCRIPTORS = (
    {"provider": "tavily", "name": "tavily", "requires": ["secret"], "usedBy": "web_search"},
    {"provider": "brave", "name": "brave", "requires": ["secret"], "usedBy": "web_search"},
    {
        "provider": "searxng",
        "name": "searxng",
        "requires": ["secret"],
        "usedBy": "web_search",
        "note": "the secret is the instance URL",
    },
    *(
        {"provider": name, "name": name, "requires": ["secret"], "usedBy": "models"}
        for name in ("openai", "anthropic", "google")
    ),
    {
        "provider": "model endpoint",
        "name": "<the endpoint's name in model_endpoints>",
        "requires": ["secret"],
        "usedBy": "models",
    },
)
GIT_DESCRIPTOR = {
    "requires": ["url", "fields.repo"],
    "fields": {
        "repo": "the repository's folder in the project drive (data://…)",
        "credential": "name of a stored credential holding the token (optional)",
    },
    "check": "reports local configuration only, never the vendor's health",
}
SOURCE_DESCRIPTOR = {
    "connector": "local",
    "requires": ["fields.root"],
    "fields": {"root": "absolute path of a folder", "rights": "'r' (default) or 'rw'"},
    "needs": MOUNT,
}
_TRUSTED = "'true' to believe the server's read-only/destructive hints (admins)"
_SAMPLING = "'true' to let the server ask the calling run's model for completions (admins)"
_SOURCE = (
    "name of a local source you may write to run the server in (its working folder; admins); "
    "its calls to tools not read-only then keep checkpoints like execute"
)
MCP_DESCRIPTORS = (
    {
        "transport": "stdio",
        "requires": ["command"],
        "fields": {"trusted": _TRUSTED, "sampling": _SAMPLING, "source": _SOURCE},
    },
    {
        "transport": "http",
        "requires": ["url"],
        "fields": {
            "trusted": _TRUSTED,
            "sampling": _SAMPLING,
            "privateHost": "'true' to reach a host on a private network (admins)",
        },
        "authorization": "a server that wants OAuth is then authorized by a person: authorize",
    },
)


@dataclass(frozen=True, slots=True)
class Plane:
    """What the plane works on."""

    caller: Caller
    credentials: CredentialStore | None
    mcp: McpServers | None
    sources: SourcePolicy
    mounts: SourceMounts | None = None
    channels: ChannelConnect | None = None
    git: GitRemotes | None = None


@dataclass(slots=True, kw_only=True)
class Step:
    verb: Verb
    kind: str
    name: str
    item: dict[str, Any] = field(default_factory=dict)
    scope: Scope = "user"


def plan(args: dict[str, Any], plane: Plane) -> list[Step]:
    """Every step of the call, in applying order; all problems at once, else nothing."""
    steps = [
        Step(verb=verb, kind=item["kind"], name=item["name"], item=item)
        for verb in VERBS
        for item in args.get(verb, [])
    ]
    problems: list[str] = []
    missing: set[str] = set()
    adding: set[tuple[str, str]] = set()
    for step in steps:
        at = f"{step.verb} {step.kind} {step.name!r}"
        grant = KIND_GRANTS[step.kind]
        if not plane.caller.grants.has(grant):
            missing.add(grant)
            role = plane.caller.role
            problems.append(f"{at}: needs feature {grant!r}, which role {role!r} lacks")
            continue
        try:
            _check(step, plane, adding)
        except (ToolError, UsageError) as exc:
            problems.append(f"{at}: {getattr(exc, 'message', str(exc))}")
            if isinstance(exc, FeatureMissing):
                missing.update(exc.data.get("features", []))
    if problems:
        error = FeatureMissing if missing and len(missing) == len(problems) else InvalidArguments
        raise error(
            "nothing was changed, because: " + "; ".join(problems) + ". Fix these (or leave "
            "those steps out) and call again.",
            data={"problems": problems, "features": sorted(missing)},
        )
    return steps


def _check(step: Step, plane: Plane, adding: set[tuple[str, str]]) -> None:
    extra = sorted(set(step.item) - {"kind", "name"})
    if step.verb != "add" and extra:
        raise InvalidArguments(f"unexpected {extra}")
    if step.kind == "credential":
        _check_credential(step, plane)
    elif step.kind == "mcp":
        _check_mcp(step, plane)
    elif step.kind == "channel":
        if plane.channels is None:
            raise ToolError("no channels service is installed", code="unavailable")
        plane.channels.check(step.verb, step.name, step.item, plane.caller)
    elif step.kind == "git":
        _check_git(step, plane)
    else:
        _check_source(step, plane)
    if step.verb == "add":
        if (step.kind, step.name) in adding:
            raise InvalidArguments("added twice in one call")
        adding.add((step.kind, step.name))


def _check_credential(step: Step, plane: Plane) -> None:
    if plane.credentials is None:
        raise ToolError("no credential store is installed", code="unavailable")
    if not NAME_PATTERN.match(step.name):
        raise InvalidArguments("a credential name is lowercase letters, digits, '_' or '-'")
    if step.verb == "authorize":
        raise InvalidArguments("a credential needs no authorization; store its value with add")
    if step.verb != "add":
        return
    item = step.item
    unexpected = sorted(set(item) - {"kind", "name", "secret", "provider", "fields"})
    if unexpected:
        raise InvalidArguments(f"a credential takes no {unexpected}")
    fields = dict(item.get("fields") or {})
    scope = fields.pop("scope", "user")
    if fields:
        raise InvalidArguments(f"unknown fields {sorted(fields)}; only 'scope' is accepted")
    if scope not in ("user", "project"):
        raise InvalidArguments(f"fields.scope is {scope!r}; use 'user' or 'project'")
    if scope == "project" and not plane.caller.grants.has(ADMIN):
        raise FeatureMissing(
            f"a project credential needs feature {ADMIN!r}", data={"features": [ADMIN]}
        )
    if not str(item.get("secret", "")).strip():
        raise InvalidArguments("'secret' is required and must not be empty")
    step.scope = "project" if scope == "project" else "user"


def _check_mcp(step: Step, plane: Plane) -> None:
    if plane.mcp is None:
        raise ToolError("no MCP service is installed", code="unavailable")
    known = step.name in plane.mcp.names()
    if step.verb in ("remove", "authorize") and not known:
        raise InvalidArguments("no mcp server by that name is connected")
    if step.verb == "authorize":
        plane.mcp.check_callback()
    if step.verb != "add":
        return
    if known:
        raise InvalidArguments("an mcp server by that name is already connected; remove it first")
    item = step.item
    unexpected = sorted(set(item) - {"kind", "name", "command", "url", "fields"})
    if unexpected:
        raise InvalidArguments(f"an mcp server takes no {unexpected}")
    if ("url" in item) == ("command" in item):
        raise InvalidArguments("give either 'command' (stdio) or 'url' (streamable HTTP)")
    fields = dict(item.get("fields") or {})
    trusted = fields.pop("trusted", "false")
    sampling = fields.pop("sampling", "false")
    private = fields.pop("privateHost", "false") if "url" in item else "false"
    source = fields.pop("source", None) if "command" in item else None
    if fields or {trusted, sampling, private} - {"true", "false"}:
        allowed = (
            "'trusted', 'sampling' and 'privateHost'"
            if "url" in item
            else "only 'trusted', 'sampling' and 'source'"
        )
        raise InvalidArguments(f"fields accepts {allowed}, each 'true' or 'false' but 'source'")
    if (
        "true" in (trusted, sampling, private) or source is not None
    ) and not plane.caller.grants.has(ADMIN):
        what = (
            "running a server in a source"
            if source is not None
            else "trusting a server's hints"
            if trusted == "true"
            else "letting a server sample the run's model"
            if sampling == "true"
            else "reaching a private host"
        )
        raise FeatureMissing(f"{what} needs feature {ADMIN!r}", data={"features": [ADMIN]})
    if source is not None:
        source_folder(str(source), plane)
    if "url" in item:
        plane.mcp.check_url(str(item["url"]))
    else:
        plane.mcp.check_command(list(item.get("command") or []))


def source_folder(name: str, plane: Plane) -> str:
    """The root of the local source ``name`` the caller may write (a server's folder)."""
    found = plane.sources.sources.get(name)
    if found is None or found.connector != "local":
        raise InvalidArguments(f"'source' must name a local source; {name!r} is none")
    if "write" not in found.rights_for(plane.caller):
        raise InvalidArguments(f"you may not write source {name!r}, so no server may run in it")
    return str(found.real_root)


def _check_git(step: Step, plane: Plane) -> None:
    if plane.git is None:
        raise ToolError("git remotes are not installed", code="unavailable")
    if step.verb == "authorize":
        raise InvalidArguments(
            "a git remote needs no authorization; store its token as a credential"
        )
    if step.verb == "add":
        plane.git.check_add(step.item, plane.caller, plane.sources)


def _check_source(step: Step, plane: Plane) -> None:
    if step.verb == "add":
        if not plane.caller.grants.has(MOUNT):
            raise FeatureMissing(
                f"registering a source needs feature {MOUNT!r}", data={"features": [MOUNT]}
            )
        if plane.mounts is None:
            raise ToolError("source registration is not installed", code="unavailable")
        unexpected = sorted(set(step.item) - {"kind", "name", "fields"})
        fields = dict(step.item.get("fields") or {})
        root, rights = fields.pop("root", ""), fields.pop("rights", "r")
        if unexpected or fields:
            raise InvalidArguments(
                "a source takes only fields.root (an absolute folder) and fields.rights"
            )
        plane.mounts.check(step.name, root, rights, plane.sources)
        return
    if step.verb == "remove":
        raise InvalidArguments(
            "a source is removed through the governed source workflow: an administrator runs "
            "`corral sources remove`"
        )
    if step.verb == "authorize":
        raise InvalidArguments("a source needs no authorization")


# -- applying ---------------------------------------------------------------------------


async def apply(step: Step, plane: Plane) -> dict[str, Any]:
    """Run one checked step; returns its projection."""
    done: dict[str, Any] = {"verb": step.verb, "kind": step.kind, "name": step.name}
    if step.kind == "credential":
        assert plane.credentials is not None
        user = plane.caller.user_id
        if step.verb == "add":
            entry = await plane.credentials.set(
                step.name,
                str(step.item["secret"]),
                user_id=user,
                scope=step.scope,
                provider=str(step.item.get("provider", "")),
            )
            return done | {"scope": entry.scope, "hasValue": True}
        if step.verb == "remove":
            scope = await _stored_scope(step.name, plane)
            await plane.credentials.remove(step.name, user_id=user, scope=scope)
            return done | {"scope": scope, "hasValue": False}
        own = await plane.credentials.entry(step.name, user_id=user, scope="user")
        shared = await plane.credentials.entry(step.name, user_id=user, scope="project")
        return done | {"hasValue": own is not None, "projectHasValue": shared is not None}
    if step.kind == "git":
        assert plane.git is not None
        if step.verb == "add":
            folder = plane.git.check_add(step.item, plane.caller, plane.sources)
            user = plane.caller.user_id
            return done | await plane.git.add(step.name, step.item, folder, created_by=user)
        if step.verb == "remove":
            return done | await plane.git.remove(step.name, plane.sources)
        return done | await plane.git.check(step.name, plane.caller, plane.sources)
    if step.kind == "mcp":
        assert plane.mcp is not None
        if step.verb == "add":
            fields = step.item.get("fields") or {}
            spec = McpServerSpec(
                name=step.name,
                command=tuple(step.item.get("command") or ()),
                url=str(step.item.get("url", "")),
                trusted=fields.get("trusted") == "true",
                private_host=fields.get("privateHost") == "true",
                sampling=fields.get("sampling") == "true",
                folder=source_folder(str(fields["source"]), plane) if "source" in fields else "",
                created_by=plane.caller.user_id,
            )
            roots = roots_for(plane.caller, plane.sources)
            return done | mcp_projection(await plane.mcp.add(spec, roots=roots))
        if step.verb == "authorize":
            found = plane.mcp.view(step.name)
            url = plane.mcp.authorization_url(step.name)
            if url is None:
                state = found.state if found else "absent"
                return done | {"state": state, "handoff": None}
            # The URL goes to the card and the CLI only; the model is told a person opens it.
            return done | {"state": "authorizing", "handoff": {"kind": "oauth", "url": url}}
        if step.verb == "remove":
            await plane.mcp.remove(step.name)
            return done | {"state": "removed"}
        found = plane.mcp.view(step.name)
        return done | (mcp_projection(found) if found else {"state": "absent"})
    if step.kind == "channel":
        assert plane.channels is not None
        return done | await plane.channels.apply(step.verb, step.name, step.item, plane.caller)
    if step.verb == "add":
        assert plane.mounts is not None
        fields = step.item.get("fields") or {}
        rights_asked = str(fields.get("rights", "r"))
        user = plane.caller.user_id
        await plane.mounts.add(step.name, str(fields["root"]), user_id=user, rights=rights_asked)
        granted = sorted({"r": "read", "w": "write"}[letter] for letter in rights_asked)
        return done | {"state": "registered", "rights": granted}
    source = plane.sources.source(step.name)
    rights = sorted(source.rights_for(plane.caller)) if source else []
    return done | {"state": "registered" if rights else "absent", "rights": rights}


async def _stored_scope(name: str, plane: Plane) -> Scope:
    assert plane.credentials is not None
    user = plane.caller.user_id
    if await plane.credentials.entry(name, user_id=user, scope="user") is not None:
        return "user"
    if plane.caller.grants.has(ADMIN):
        return "project"
    return "user"  # nothing of the caller's own: remove reports it as not stored


def mcp_projection(view: McpServerView) -> dict[str, Any]:
    shown = {
        "state": view.state,
        "transport": view.transport,
        "trusted": view.trusted,
        "package": f"mcp:{view.name}",
        "tools": list(view.tools),
        "leftOut": list(view.left_out),
    }
    offered = {
        "warnings": list(view.warnings),
        "prompts": list(view.prompts),
        "resources": view.resources,
        "resourceTemplates": view.resource_templates,
    }
    shown |= {key: value for key, value in offered.items() if value}
    return shown | ({"problem": view.problem} if view.problem else {})


async def list_kind(kind: str, plane: Plane) -> dict[str, Any]:
    """One kind's rows, or its refusal; never raises for a kind the caller may not reach."""
    grant = KIND_GRANTS[kind]
    if not plane.caller.grants.has(grant):
        return {"kind": kind, "refused": f"needs feature {grant!r}", "code": "feature_missing"}
    if kind == "credential":
        if plane.credentials is None:
            return {"kind": kind, "refused": "no credential store", "code": "unavailable"}
        entries = await plane.credentials.entries(user_id=plane.caller.user_id)
        rows = [
            {"name": e.name, "scope": e.scope, "provider": e.provider, "hasValue": e.has_value}
            for e in entries
        ]
        return {"kind": kind, "rows": rows, "descriptors": list(CREDENTIAL_DESCRIPTORS)}
    if kind == "git":
        if plane.git is None:
            return {"kind": kind, "refused": "no git service", "code": "unavailable"}
        return {"kind": kind, "rows": await plane.git.rows(), "descriptors": [GIT_DESCRIPTOR]}
    if kind == "mcp":
        if plane.mcp is None:
            return {"kind": kind, "refused": "no MCP service", "code": "unavailable"}
        views = [plane.mcp.view(name) for name in plane.mcp.names()]
        rows = [{"name": v.name} | mcp_projection(v) for v in views if v is not None]
        return {"kind": kind, "rows": rows, "descriptors": list(MCP_DESCRIPTORS)}
    if kind == "channel":
        if plane.channels is None:
            return {"kind": kind, "refused": "no channels service", "code": "unavailable"}
        return {"kind": kind, **await plane.channels.list(plane.caller)}
    rows = []
    for source in sorted(plane.sources.sources.values(), key=lambda s: s.name):
        rights = source.rights_for(plane.caller)
        if rights:
            rows.append(
                {"name": source.name, "connector": source.connector, "rights": sorted(rights)}
            )
    return {"kind": kind, "rows": rows, "descriptors": [SOURCE_DESCRIPTOR]}
