"""Activating skills in a run, and what the run's shell calls receive.

``execute`` with action ``skill`` renders the bundle's body with ``${SKILL_DIR}``,
``${SKILL_URI}``, ``${SESSION_ID}`` and ``${CORRAL_API}`` substituted, resolves the
credentials the skill declared from the store (as the calling user) and keeps them for the
run's later shell calls. Several skills may be active; a shell call's ``skill`` input names
the one whose substitutions and credentials bind (default: the most recent activation).

Every shell call of a run also gets the run's ticket (``CORRAL_TICKET``), so a skill's
scripts can call ``${CORRAL_API}`` as the run's user. Secrets reach the child process only:
the runner redacts them from the command's output (live frames, results, shell logs), and
the kernel's redactor learns the credential values, so no result, row or log shows them.
Tickets are not taught to the kernel's redactor (one per run would grow it without end);
they die with the run. Activations and tickets end with the run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from corral.connect.credentials import InjectedCredential
from corral.errors import ToolError
from corral.kernel.tickets import Tickets
from corral.policy.sources import SourceDef, SourceGrant
from corral.runtime.runs import RunRecord
from corral.runtime.skills.allowed_tools import narrowing_of
from corral.runtime.skills.bundle import SkillBundle, SkillError, parse_skill
from corral.runtime.skills.catalog import DRIVE_SKILLS, SkillCatalog, SkillSet
from corral.runtime.skills.trust import SkillTrust, Trusted, bundle_digest
from corral.service_protocols import CredentialLookup
from corral.tools.narrowing import Narrowing
from corral.tools.results import ToolResult
from corral.tools.skill_binding import ShellBinding, SkillScope

__all__ = ["TICKET_VARIABLE", "Skills"]

TICKET_VARIABLE = "CORRAL_TICKET"


class _Credentials(CredentialLookup, Protocol):
    async def entry(self, name: str, *, user_id: str, scope: Literal["user", "project"]) -> object:
        """The stored entry (no value) of that scope, or None."""
        ...

    async def injected(self, *, user_id: str) -> list[InjectedCredential]:
        """The credentials the egress proxy injects (the sandbox gets placeholders)."""
        ...


class _State(Protocol):
    @property
    def disabled_packages(self) -> frozenset[str]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class _Active:
    bundle: SkillBundle
    values: dict[str, str] = field(repr=False)
    """Declared variable → credential value, for the staged ones."""


class Skills:
    """The skills service: activation per run, bindings for shell calls, run endings."""

    def __init__(
        self,
        *,
        catalog: SkillCatalog,
        tickets: Tickets,
        state: Callable[[], Awaitable[_State]],
        credentials: Callable[[], _Credentials | None],
        add_secrets: Callable[[list[str]], None],
        api_url: str,
        api_url_fixed: bool = False,
        trust: SkillTrust,
    ) -> None:
        self.catalog = catalog
        self.trust_records = trust
        self.tickets = tickets
        self.api_url = api_url
        """``${CORRAL_API}``: the server's base URL."""
        self._api_url_fixed = api_url_fixed
        self._state = state
        self._credentials = credentials
        self._add_secrets = add_secrets
        self._active: dict[str, list[_Active]] = {}
        self._known: set[str] = set()

    def serving_at(self, host: str, port: int) -> None:
        """The server bound ``host:port``: scripts reach it there, unless the start-up
        setting ``api_url`` names another address (a proxy in front, say)."""
        if self._api_url_fixed:
            return
        loopback = host in ("0.0.0.0", "::", "")
        self.api_url = f"http://{'127.0.0.1' if loopback else host}:{port}"

    async def available(self, *, viewer: str | None) -> SkillSet:
        """The skills ``viewer`` may activate now (a disabled package's are gone).

        A drive skill is left out, with an error saying why, unless its current content is
        trusted for the viewer; ``viewer`` None is the operator's view: every skill."""
        state = await self._state()
        found = self.catalog.load(disabled=state.disabled_packages)
        if viewer is None or all(b.origin != "drive" for b in found.skills.values()):
            return found  # nothing to check trust of: the catalog's own (kept) set
        skills: dict[str, SkillBundle] = {}
        untrusted: list[SkillError] = []
        for name, bundle in found.skills.items():
            if bundle.origin != "drive" or self.trust_records.trusts(
                name, bundle_digest(bundle.folder), viewer
            ):
                skills[name] = bundle
            else:
                untrusted.append(_untrusted(bundle))
        return SkillSet(skills=skills, errors=(*found.errors, *untrusted))

    async def trust(self, name: str, *, user_id: str, project: bool) -> Trusted:
        """Trust the drive skill ``name`` as it is now: for everyone when ``project`` (an
        administrator's decision), else for ``user_id`` alone."""
        bundle = (await self.available(viewer=None)).skills.get(name)
        if bundle is None or bundle.origin != "drive":
            raise ToolError(
                f"there is no skill {name!r} in the drive's skills folder; only drive skills "
                "need trust (`corral skills list` shows them)",
                code="unknown_skill",
            )
        digest = bundle_digest(bundle.folder)
        if digest is None:
            raise ToolError(
                f"skill {name!r} holds a symbolic link or a special file; remove it first",
                code="skill_invalid",
            )
        return self.trust_records.trust(name, digest, user_id=user_id, project=project)

    def _trusted_now(self, bundle: SkillBundle, user_id: str) -> SkillBundle | None:
        """The bundle read again from disk, when its content now is what was trusted."""
        if bundle.origin != "drive":
            return bundle
        before = bundle_digest(bundle.folder)
        fresh = parse_skill(bundle.folder, origin=bundle.origin, package=bundle.package)
        if (
            isinstance(fresh, SkillError)
            or before != bundle_digest(bundle.folder)
            or not self.trust_records.trusts(bundle.name, before, user_id)
        ):
            return None
        return fresh

    def _uri(self, bundle: SkillBundle) -> str:
        if bundle.origin == "drive":
            return f"data://{DRIVE_SKILLS}/{bundle.name}"
        return f"file://{bundle.folder}"

    def _variables(self, scope: SkillScope, bundle: SkillBundle | None) -> dict[str, str]:
        found = {"SESSION_ID": scope.conversation_id or "", "CORRAL_API": self.api_url}
        if bundle is not None:
            found |= {
                "SKILL_DIR": str(bundle.folder),
                "SKILL_URI": self._uri(bundle),
                "SKILL_NAME": bundle.name,
            }
        return found

    async def activate(self, name: str, ctx: SkillScope, /) -> ToolResult:
        """Render ``name``'s body and stage its declared credentials for the run."""
        found = await self.available(viewer=ctx.caller.user_id)
        bundle = found.skills.get(name)
        if bundle is not None:
            # Read and checked again as one: the files may have changed since the listing.
            bundle = self._trusted_now(bundle, ctx.caller.user_id)
            if bundle is None:
                raise ToolError(
                    f"skill {name!r} changed while it was being activated and is no longer "
                    "trusted; try again, or ask an administrator to trust it",
                    code="skill_untrusted",
                )
        if bundle is None:
            broken = [e for e in found.errors if Path(e.file).parent.name == name]
            if broken:
                raise ToolError(
                    f"skill {name!r} is not loaded: {broken[0].describe()}; fix the bundle "
                    "(`corral skills list` shows every error)",
                    code="skill_invalid",
                )
            known = ", ".join(sorted(found.skills)) or "none"
            raise ToolError(
                f"there is no skill {name!r}; available skills: {known}", code="unknown_skill"
            )
        if ctx.run_id is None or ctx.conversation_id is None:
            raise ToolError(
                f"skill {name!r} can only be activated inside a conversation's run, where its "
                "credentials are staged for the run's later shell calls",
                code="no_run",
            )
        values, missing = await self._resolve(bundle, ctx.caller.user_id)
        active = [a for a in self._active.get(ctx.run_id, []) if a.bundle.name != name]
        self._active[ctx.run_id] = [*active, _Active(bundle=bundle, values=values)]
        body = bundle.body
        for variable, value in self._variables(ctx, bundle).items():
            body = body.replace("${" + variable + "}", value)
        lines = [f'<skill name="{bundle.name}" dir="{bundle.folder}">', body, "</skill>"]
        if bundle.credentials:
            staged = [c.env for c in bundle.credentials if c.env in values]
            if staged:
                lines.append(
                    "Credentials staged for this run's shell calls (values hidden): "
                    + ", ".join(staged)
                    + "."
                )
        for credential in missing:
            lines.append(
                f"Credential {credential!r} is not stored for you, so its variable is not set; "
                f"ask the user to run `corral credentials set {credential}`."
            )
            if bundle.origin == "drive":
                lines.append(
                    "(A skill in the drive receives only the user's own credentials, never "
                    "the project's: anyone who may write the drive could have written it.)"
                )
        lines.append(
            f'Run its scripts with execute, cwd "${{SKILL_DIR}}" and skill "{bundle.name}".'
        )
        return ToolResult.text_result(
            "\n".join(lines),
            data={
                "skill": bundle.name,
                "skill_dir": str(bundle.folder),
                "skill_uri": self._uri(bundle),
                "origin": bundle.origin,
                "credentials": [
                    {"name": c.name, "env": c.env, "staged": c.env in values}
                    for c in bundle.credentials
                ],
                "allowed_tools": list(bundle.allowed_tools),
                "other_fields": bundle.other_fields,
                "warnings": list(bundle.warnings),
                "active": [a.bundle.name for a in self._active[ctx.run_id]],
            },
        )

    async def _resolve(self, bundle: SkillBundle, user_id: str) -> tuple[dict[str, str], list[str]]:
        values: dict[str, str] = {}
        missing: list[str] = []
        lookup = self._credentials()
        injected: dict[str, InjectedCredential] | None = None
        for credential in bundle.credentials:
            value = None
            # Project credentials only for skills an operator installed (packages, settings
            # folders): anyone who may write the drive could have written a drive skill.
            own = bundle.origin != "drive" or (
                lookup is not None
                and await lookup.entry(credential.name, user_id=user_id, scope="user") is not None
            )
            if lookup is not None and own:
                value = await lookup.lookup(credential.name, user_id=user_id)
                if value:
                    if injected is None:
                        injected = {c.name: c for c in await lookup.injected(user_id=user_id)}
                    if credential.name in injected:
                        value = _placeholder(injected[credential.name])
            if value:
                values[credential.env] = value
            else:
                missing.append(credential.name)
        new = [v for v in values.values() if v not in self._known]
        if new:
            self._known.update(new)
            self._add_secrets(new)
        return values, missing

    def narrowing(self, run_id: str | None) -> Narrowing:
        """How the run's active skills narrow its tools (their ``allowed-tools``)."""
        return narrowing_of(a.bundle.allowed_tools for a in self._active.get(run_id or "", []))

    def active(self, run_id: str) -> list[str]:
        """The skills active in ``run_id``, oldest activation first."""
        return [a.bundle.name for a in self._active.get(run_id, [])]

    async def binding(self, ctx: SkillScope, skill: str | None, /) -> ShellBinding:
        """What one shell call receives; ``skill`` picks among the run's active skills."""
        active = self._active.get(ctx.run_id or "", [])
        chosen: _Active | None = active[-1] if active else None
        if skill is not None:
            chosen = next((a for a in active if a.bundle.name == skill), None)
            if chosen is None:
                names = ", ".join(a.bundle.name for a in active) or "none"
                raise ToolError(
                    f"skill {skill!r} is not active in this run (active: {names}); activate it "
                    'first with action "skill", or leave `skill` out',
                    code="skill_not_active",
                )
        secrets: dict[str, str] = {}
        if ctx.run_id is not None and ctx.conversation_id is not None:
            ticket = await self.tickets.for_run(
                run_id=ctx.run_id,
                user_id=ctx.caller.user_id,
                conversation_id=ctx.conversation_id,
            )
            secrets[TICKET_VARIABLE] = ticket
        bundle = chosen.bundle if chosen is not None else None
        if bundle is not None and self._trusted_now(bundle, ctx.caller.user_id) is None:
            # A member edited the drive skill's scripts after it was activated.
            raise ToolError(
                f"skill {bundle.name!r} changed in the drive since it was activated and its new "
                "content is not trusted; ask an administrator to trust it, then activate it again",
                code="skill_untrusted",
            )
        if chosen is not None:
            secrets |= chosen.values
        sources: tuple[SourceDef, ...] = ()
        if bundle is not None and bundle.origin != "drive":
            grant = SourceGrant(
                principal_kind="user",
                principal=ctx.caller.user_id,
                rights=frozenset({"read", "exec"}),
            )
            sources = (
                SourceDef(
                    name=f"skill.{bundle.name}",
                    connector="local",
                    root=bundle.folder,
                    grants=(grant,),
                ),
            )
        return ShellBinding(
            skill=bundle.name if bundle is not None else None,
            env=self._variables(ctx, bundle),
            secrets=secrets,
            sources=sources,
        )

    async def end_run(self, run: RunRecord, status: str) -> None:
        """The run-end hook: its activations are forgotten and its tickets die."""
        del status
        self._active.pop(run.id, None)
        await self.tickets.end_run(run.id)


def _untrusted(bundle: SkillBundle) -> SkillError:
    return SkillError(
        file=str(bundle.folder / "SKILL.md"),
        field="",
        message=f"skill {bundle.name!r} in the shared drive is not trusted for you: anyone "
        "with drive write could have written or changed it; an administrator may trust it "
        f"for everyone (`corral skills trust {bundle.name}`), or you for yourself",
    )


def _placeholder(credential: InjectedCredential) -> str:
    """What a command gets for a credential the egress proxy injects: never the value."""
    from corral.shell.egress.credentials import CredentialBinding, placeholder

    return placeholder(
        CredentialBinding(
            name=credential.name,
            secret=credential.value,
            hosts=credential.injection.hosts,
            inject_as=credential.injection.inject_as,
            field_name=credential.injection.field,
        )
    )
