"""The shell service: ``ctx.services.shells``, what the ``execute`` handler and the shells
routes and commands use.

It joins the pieces: both guards (:mod:`corral.shell.check`), the environment, the
sandbox layout for the caller's sources, the runner for foreground commands, the host
broker for the host plane, and :class:`corral.shell.background.BackgroundShells`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from corral.errors import PolicyDenied, ToolError
from corral.policy.identity import Caller
from corral.policy.sources import SourceDef, SourcePolicy
from corral.secrets import Redactor
from corral.service_protocols import ReportSink
from corral.settings import Settings
from corral.shell.background import BackgroundShells, ConversationAccess, ShellLaunch
from corral.shell.capture import TailBuffer, trim_marker
from corral.shell.check import CheckedCommand, check_command, platform_protected
from corral.shell.checkpoints import Snapshot, TooManyEntries
from corral.shell.checkpoints.around import around, checkpoint_limit, writable_roots
from corral.shell.checkpoints.keeper import CheckpointKeeper, retention_of
from corral.shell.checkpoints.read_only import proven_read_only
from corral.shell.checkpoints.rows import CallScope as CheckpointScope
from corral.shell.checkpoints.rows import CheckpointRows
from corral.shell.confinement import Confinement, Confiner, SandboxStatus
from corral.shell.egress.ask import ApprovedHosts, EgressQuestion, asker_for
from corral.shell.egress.bridge import EgressBridge, bridge_python, proxy_environment
from corral.shell.egress.ca import CertificateAuthority, trust_environment
from corral.shell.egress.credentials import CredentialBinding
from corral.shell.egress.helpers import HelperNetwork
from corral.shell.egress.log import CallScope, EgressLog, EgressStore
from corral.shell.egress.loopback import LoopbackProxy
from corral.shell.egress.policy import EgressPolicy, egress_policy_for
from corral.shell.egress.proxy import Asker, EgressProxy, Interceptor
from corral.shell.egress.tls import TlsInterceptor
from corral.shell.egress.upstream import UpstreamConnector
from corral.shell.environment import Environment, build_environment, call_env_problem
from corral.shell.host.client import BrokerRefused, BrokerUnavailable, HostBrokerClient
from corral.shell.landlock import landlock_abi
from corral.shell.live import LivePacer, LiveSink
from corral.shell.records import ShellRecord, ShellStore
from corral.shell.runner import Execution, ProcessSpec, Spawner, spawn_process
from corral.shell.sandbox import BoundSource, SandboxFiles
from corral.shell.step_spans import note_spawn, step_span
from corral.shell.verdict import Verdict
from corral.tracing.propagation import traced_variables

__all__ = ["INLINE_MAX", "ShellOutcome", "ShellRequest", "ShellService", "judged_inline"]

Bridge = EgressBridge | LoopbackProxy
"""A call's way to the egress proxy: bridged into bubblewrap's namespace, or on the host's
loopback for the Landlock tier."""

BASH = ("/bin/bash", "--noprofile", "--norc", "-c")
log = logging.getLogger("corral.shell")

OnCancel = Callable[[Callable[[], Any]], Callable[[], None]]
EgressCredentials = Callable[[str], Awaitable[Sequence[CredentialBinding]]]
"""A user id to the credentials the egress proxy may inject for that user."""


class _State(Protocol):
    @property
    def live(self) -> Mapping[str, Any]: ...
    @property
    def sources(self) -> SourcePolicy: ...


class StateSource(Protocol):
    async def dispatch_state(self) -> _State: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ShellRequest:
    command: str
    cwd: str | None
    caller: Caller
    env: Mapping[str, str] = field(default_factory=dict)
    timeout: int | None = None
    """Seconds; None means the default (120 s in the foreground, the background ceiling)."""
    reason: str = ""
    agent: str = "default"
    profile: str | None = None
    """The call's permission profile: its section of the egress policy, when it has one."""
    workflow: tuple[str, ...] = ()
    """The workflow whose run makes the call, by its id and title (either may key its section
    of the egress policy); empty outside a workflow run."""
    conversation_id: str | None = None
    run_id: str | None = None
    call_id: str | None = None
    declared: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Secrets staged for the child only: the active skill's declared credentials and the
    run's ticket. They pass the environment's secret filter and are redacted from output."""
    sources: tuple[SourceDef, ...] = ()
    """Sources this call adds (an active skill's own folder, read and exec)."""
    variables: Mapping[str, str] = field(default_factory=dict)
    """Plain variables the platform sets (``SKILL_DIR``, ``SESSION_ID``, ``CORRAL_API``…)."""
    checked: CheckedCommand | None = field(default=None, repr=False)
    """Both guards' judgement of this very command, cwd, caller and sources, reached by the
    pipeline's policy step of the same call: the service then does not judge it again."""
    egress_question: EgressQuestion | None = field(default=None, repr=False)
    """Who is asked about a domain no egress rule matches (policy ``ask``): the person of
    the call's run; None refuses such a domain."""


@dataclass(slots=True, kw_only=True)
class ShellOutcome:
    status: Literal["exited", "stopped", "timed_out"]
    exit_code: int | None
    duration: float
    plane: Literal["app", "host"]
    confinement: str
    network: str
    cwd: str
    output: str
    total_chars: int
    trimmed: int
    chars: dict[str, int]
    env_dropped: list[str]
    notes: list[str]
    host: dict[str, Any] | None = None
    egress: dict[str, Any] | None = None
    """Network mode proxy: connection counts and the refused ones with their reasons."""
    checkpoint: dict[str, Any] | None = None
    """What the call changed in its writable sources (id, files, bytes); None when it was
    proven read-only or had no writable source."""


DEFAULT_TIMEOUT = 120

INLINE_MAX = 256
"""Commands up to this many characters, with no glob character, are judged on the event
loop: their analysis and path checks take about 0.1 ms, less than the hop to a worker
thread and back (0.35 ms of CPU per call, measured on ``execute true``)."""


def judged_inline(command: str) -> bool:
    """Whether ``command`` is judged on the loop (short, and nothing the gate would glob)."""
    return len(command) <= INLINE_MAX and not any(c in command for c in "*?[")


def captured_text(capture: TailBuffer, limit: int) -> tuple[str, int]:
    """The capture with a leading marker when it was trimmed, and how much was trimmed."""
    text = capture.text()
    trimmed = capture.total - len(text)
    if trimmed:
        text = trim_marker(trimmed, capture.total, "shell_max_output", limit) + "\n" + text
    return text, trimmed


class ShellService:
    def __init__(
        self,
        *,
        settings: Settings,
        sessions: async_sessionmaker[AsyncSession],
        state: StateSource,
        reports: Callable[[], ReportSink | None],
        conversation_access: Callable[[], ConversationAccess | None],
        status: SandboxStatus,
        files: SandboxFiles,
        spawner: Spawner = spawn_process,
        broker: HostBrokerClient | None = None,
    ) -> None:
        self.settings = settings
        self.status = status
        self.files = files
        self.confiner = Confiner(
            status=status,
            files=files,
            data_dir=str(settings.data_dir),
            protected=platform_protected(settings),
            sandbox_uid=settings.sandbox_uid,
        )
        self.broker = broker
        self._state = state
        self._spawner = spawner
        self._foreground: set[Execution] = set()
        self.store = ShellStore(sessions)
        self.egress_store = EgressStore(sessions)
        self.egress_approved = ApprovedHosts(sessions, fresh_seconds=settings.live_refresh_seconds)
        self.egress_upstream: UpstreamConnector | None = None
        """Set by :meth:`enable_egress`; without it network mode proxy falls back to off."""
        self.egress_interceptor: Interceptor | None = TlsInterceptor(
            CertificateAuthority(settings.private_dir, trust_root=settings.data_dir / "sandbox")
        )
        self.egress_credentials: EgressCredentials | None = None
        """The caller's credentials the proxy injects (set by :meth:`enable_egress`)."""
        self._closing: set[asyncio.Task[dict[str, Any]]] = set()
        self.judged = 0
        """Commands judged by both guards since start (analysis runs once per judgement)."""
        self.checkpoints = CheckpointKeeper(settings.data_dir, CheckpointRows(sessions))
        self._background_checkpoints: set[asyncio.Task[None]] = set()
        self.background = BackgroundShells(
            store=self.store,
            settings=settings,
            reports=reports,
            conversation_access=conversation_access,
            live=self._live,
            spawner=spawner,
        )

    def enable_egress(
        self, upstream: UpstreamConnector, *, credentials: EgressCredentials | None = None
    ) -> None:
        """Give network mode ``proxy`` its way out (the platform hands web_fetch's rules)
        and, with ``credentials``, the bound credentials it injects for the caller."""
        self.egress_upstream = upstream
        if credentials is not None:
            self.egress_credentials = credentials

    async def _bindings(self, request: ShellRequest) -> list[CredentialBinding]:
        if self.egress_credentials is None:
            return []
        return list(await self.egress_credentials(request.caller.user_id))

    async def _live(self) -> Mapping[str, Any]:
        return (await self._state.dispatch_state()).live

    @property
    def confinement(self) -> Confinement:
        """The tier commands run under (the strongest allowed one when none works: they
        are refused then, and verdicts judge them as that tier would)."""
        if self.status.tier is not None:
            return self.status.tier
        return "landlock" if self.settings.sandbox == "landlock" else "bubblewrap"

    # -- judging ----------------------------------------------------------------------------

    async def check(
        self,
        command: str,
        *,
        cwd: str | None,
        caller: Caller,
        policy: SourcePolicy | None = None,
    ) -> CheckedCommand:
        """Both guards: on the loop for a short command without a glob, else off it (a long
        script takes a while to analyse, and a glob may make the gate scan folders)."""
        if policy is None:
            policy = (await self._state.dispatch_state()).sources
        self.judged += 1
        judge = functools.partial(
            check_command,
            command,
            cwd=cwd,
            caller=caller,
            policy=policy,
            settings=self.settings,
            confinement=self.confinement,
        )
        if judged_inline(command):
            return judge()
        return await asyncio.to_thread(judge)

    async def verdict(self, command: str, *, cwd: str | None, caller: Caller) -> Verdict:
        """Would ``command`` run in ``cwd`` for ``caller``? Nothing runs."""
        return (await self.check(command, cwd=cwd, caller=caller)).verdict

    def check_env(self, env: Mapping[str, str]) -> None:
        """Refuse a call ``env`` that sets a variable the command may not get (named)."""
        problem = call_env_problem(env, private=(os.path.realpath(self.settings.data_dir),))
        if problem is None:
            return
        name, why = problem
        raise PolicyDenied(
            f"The call's env sets {name!r}, which {why}. Leave it out of env (an ordinary "
            "variable can be set inside the command instead).",
            data={"guard": "environment", "rule": "env_refused", "word": name},
        )

    async def _allowed(self, request: ShellRequest, policy: SourcePolicy) -> CheckedCommand:
        self.check_env(request.env)
        checked = request.checked
        if checked is None:
            checked = await self.check(
                request.command, cwd=request.cwd, caller=request.caller, policy=policy
            )
        if not checked.verdict.allowed:
            raise checked.verdict.error()
        if checked.plane == "app" and not self.status.usable:
            raise ToolError(self.status.refusal(), code="sandbox_unavailable")
        return checked

    # -- the app plane ----------------------------------------------------------------------

    def _prepare(
        self,
        checked: CheckedCommand,
        request: ShellRequest,
        policy: SourcePolicy,
        network: bool,
        bridge: Bridge | None = None,
    ) -> tuple[ProcessSpec, Environment, Callable[[], None]]:
        assert checked.cwd is not None
        bound = [
            BoundSource(name=s.name, root=str(s.real_root), writable="write" in rights)
            for s in policy.sources.values()
            if s.connector == "local" and (rights := s.rights_for(request.caller))
        ]
        trust = self._trust_bundle() if bridge is not None else None
        if trust is not None:
            # The folder holds the public bundle only; the CA key lies in a sibling folder.
            bound.append(BoundSource(name="egress-trust", root=str(trust.parent), writable=False))
        argv: list[str] = [*BASH, request.command]
        prepared = self.confiner.command(
            bridge.wrap(argv) if bridge is not None else argv,
            cwd=checked.cwd,
            sources=bound,
            network=network,
            call_env=request.env,
            declared=request.declared,
            variables=traced_variables(request.variables),
            proxy_port=bridge.port if isinstance(bridge, LoopbackProxy) else None,
        )
        spec = prepared.spec
        if bridge is not None:
            spec.env.update(proxy_environment(bridge.port))
            if trust is not None:
                spec.env.update(trust_environment(str(trust)))
            spec = dataclasses.replace(spec, pass_fds=(*spec.pass_fds, *bridge.pass_fds))
        return spec, prepared.environment, prepared.cleanup

    def _trust_bundle(self) -> Path | None:
        """The bundle a proxied command trusts (system CAs and the installation CA), when
        the proxy intercepts TLS."""
        if not isinstance(self.egress_interceptor, TlsInterceptor):
            return None
        return self.egress_interceptor.ca.ensure_bundle()

    def _network(self, live: Mapping[str, Any]) -> tuple[bool, str]:
        if self.confinement == "unconfined":
            return True, "unrestricted (unconfined)"
        on = bool(live["shell_network"])
        return on, "on (live setting shell_network)" if on else "off"

    def _egress_unavailable(self, live: Mapping[str, Any]) -> str | None:
        """Why network mode proxy is off whatever the egress policy says; None: it may run."""
        if live["shell_network_mode"] != "proxy":
            return "off"
        tier = self.status.tier
        if self.confinement != tier or tier not in ("bubblewrap", "landlock"):
            return "off (network mode proxy needs the bubblewrap or Landlock tier)"
        if tier == "landlock" and landlock_abi() < 4:
            return "off (network mode proxy needs Landlock ABI 4 for its TCP rules)"
        if self.egress_upstream is None or (tier == "bubblewrap" and bridge_python() is None):
            return "off (the egress proxy is not available here)"
        return None

    def _egress_policy(
        self,
        live: Mapping[str, Any],
        agent: str,
        remembered: Sequence[str] = (),
        profile: str | None = None,
        workflow: Sequence[str] = (),
    ) -> tuple[EgressPolicy | None, str]:
        """Network mode proxy for this call: its policy (with the hosts ``remembered`` for
        the agent), or None and why it is off."""
        unavailable = self._egress_unavailable(live)
        if unavailable is not None:
            return None, unavailable
        section = egress_policy_for(live["egress"], agent=agent, workflow=workflow, profile=profile)
        policy = section.with_remembered(remembered)
        if not policy.permits_anything:
            return None, "off"  # the egress policy allows no domain
        return policy, "proxy (egress policy)"

    async def helper_network(
        self,
        *,
        agent: str = "default",
        conversation_id: str | None = None,
        handoff: Literal["fd", "path"] = "fd",
    ) -> HelperNetwork | None:
        """The network of a helper process (a command hook, a stdio MCP server; its
        connections are logged under ``conversation_id``) under the shell's egress
        policy: None (the host's network) where shell calls have the network or the tier
        is neither bubblewrap nor Landlock ABI 4 or later, else no network of its own (a
        namespace; on the Landlock tier, no TCP connect and no other socket) or, when the
        policy allows some domain, the proxy alone."""
        live = await self._live()
        network, _ = self._network(live)
        tier, binary = self.status.tier, self.status.binary
        held = (tier == "bubblewrap" and binary is not None) or (
            tier == "landlock" and landlock_abi() >= 4  # older kernels: no TCP rules to hold it
        )
        if network or not held:
            return None
        policy, label = self._egress_policy(live, agent)
        scope = CallScope(agent=agent, conversation_id=conversation_id)
        bridge = None if policy is None else self._bridge(policy, scope, handoff)
        trust = self._trust_bundle() if bridge is not None else None
        return HelperNetwork(
            binary if tier == "bubblewrap" else None,
            bridge=bridge,
            store=self.egress_store,
            label=label,
            trust=trust_environment(str(trust)) if trust is not None else None,
        )

    def _bridge(
        self,
        policy: EgressPolicy,
        scope: CallScope,
        handoff: Literal["fd", "path"] = "fd",
        bindings: Sequence[CredentialBinding] = (),
        asker: Asker | None = None,
    ) -> Bridge:
        assert self.egress_upstream is not None
        hosts = frozenset(host for binding in bindings for host in binding.hosts)
        proxy = EgressProxy(
            policy=dataclasses.replace(policy, credential_hosts=policy.credential_hosts | hosts),
            upstream=self.egress_upstream,
            log=EgressLog(scope),
            interceptor=self.egress_interceptor,
            credentials=bindings,
            asker=asker,
        )
        if self.status.tier == "landlock":
            return LoopbackProxy(proxy)
        python = bridge_python()
        assert python is not None
        return EgressBridge(proxy, python, handoff=handoff)

    async def _call_bridge(
        self, live: Mapping[str, Any], request: ShellRequest, seconds: float
    ) -> tuple[Bridge | None, str]:
        """A shell call's proxy bridge (None: no network) and its network label; an unmatched
        domain is asked about for at most ``seconds``, the call's own limit."""
        unavailable = self._egress_unavailable(live)
        if unavailable is not None:  # the remembered hosts cannot matter: no query for them
            return None, unavailable
        user = request.caller.user_id
        remembered = await self.egress_approved.hosts(user, request.agent)
        policy, label = self._egress_policy(
            live, request.agent, remembered, request.profile, request.workflow
        )
        if policy is None:
            return None, label
        asker = None
        if policy.unmatched == "ask" and request.egress_question is not None:
            asker = asker_for(
                request.egress_question,
                approved=self.egress_approved,
                user_id=user,
                agent=request.agent,
                wait_seconds=float(live["egress_ask_seconds"]),
                deadline=time.monotonic() + seconds,
            )
        bindings = await self._bindings(request)
        return self._bridge(policy, _scope(request), bindings=bindings, asker=asker), label

    def _closing_bridge(self, cleanup: Callable[[], None], bridge: Bridge) -> Callable[[], None]:
        """A background shell's cleanup that also ends its proxy and stores its log."""

        def both() -> None:
            cleanup()
            task = asyncio.get_running_loop().create_task(self._finish_egress(bridge, []))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

        return both

    async def settle_egress(self) -> None:
        """Wait until ended background shells' proxies are closed and their logs stored."""
        if self._closing:
            await asyncio.wait(list(self._closing), timeout=5.0)

    async def _finish_egress(self, bridge: Bridge, notes: list[str]) -> dict[str, Any]:
        await bridge.close()
        log = bridge.proxy.log
        await self.egress_store.save(log)
        refused = log.refused()
        if refused:
            shown = "; ".join(
                f"{r['host']}:{r['port']}{' ' + r['request'] if 'request' in r else ''} "
                f"({r['rule']}): {r['reason']}"
                for r in refused[:10]
            )
            more = f" and {len(refused) - 10} more" if len(refused) > 10 else ""
            notes.append(f"The egress proxy refused {len(refused)} connection(s): {shown}{more}.")
        return {**log.counts(), "refused_connections": refused}

    async def run(
        self, request: ShellRequest, *, on_cancel: OnCancel, live_sink: LiveSink
    ) -> ShellOutcome:
        """Run a command in the foreground; Stop (``on_cancel``) ends its process group."""
        state = await self._state.dispatch_state()
        live = state.live
        policy = _policy(state.sources, request)
        checked = await self._allowed(request, policy)
        pacer = LivePacer(
            live_sink,
            flush_ms=int(live["live_shell_flush_ms"]),
            frame_max=int(live["live_shell_frame_max"]),
            stream_cap=int(live["live_shell_stream_cap"]),
        )
        limit = int(live["shell_max_output"])
        timeout = request.timeout or DEFAULT_TIMEOUT
        if checked.plane == "host":
            return await self._run_host(request, checked, pacer, on_cancel, timeout, limit)
        roots = self._checkpoint_roots(checked, request, policy)
        async with around(
            self.checkpoints,
            roots,
            live,
            call_id=request.call_id,
            conversation_id=request.conversation_id,
        ) as checkpointing:
            network, network_label = self._network(live)
            bridge = None
            if not network:
                bridge, network_label = await self._call_bridge(live, request, timeout)
            spec, environment, cleanup = self._prepare(checked, request, policy, network, bridge)
            redact = Redactor(environment.secrets) if environment.secrets else None
            try:
                with step_span("spawn") as span:
                    execution = await Execution.start(
                        spec,
                        spawner=self._spawner,
                        capture_limit=limit,
                        sinks=[pacer.feed],
                        redact=redact,
                        identify=False,  # a foreground call never looks for it again
                    )
                    note_spawn(span, "app", self.confinement)
            except OSError as exc:
                cleanup()
                if bridge is not None:
                    await bridge.close()
                raise _spawn_failed(exc) from None
            if bridge is not None:
                bridge.spawned()
            self._foreground.add(execution)
            unregister = on_cancel(lambda: execution.request_stop("stopped"))
            try:
                outcome = await execution.finish(
                    limit=timeout, grace=int(live["shell_stop_grace_ms"]) / 1000
                )
            finally:
                unregister()
                pacer.close()
                self._foreground.discard(execution)
                cleanup()
                if bridge is not None:
                    await asyncio.shield(bridge.close())
            scope = CheckpointScope(
                conversation_id=request.conversation_id,
                run_id=request.run_id,
                user_id=request.caller.user_id,
                tool="execute",
            )
            checkpoint = await checkpointing.keep(request.call_id, scope, live)
        text, trimmed = captured_text(outcome.capture, limit)
        notes: list[str] = [checkpointing.unkept] if checkpointing.unkept else []
        egress = None if bridge is None else await self._finish_egress(bridge, notes)
        if outcome.undrained:
            notes.append(
                "A detached process kept the output open after the command ended; output it "
                "printed after that was not collected."
            )
        return ShellOutcome(
            status=outcome.status,
            exit_code=outcome.exit_code,
            duration=outcome.duration,
            plane="app",
            confinement=self.confinement,
            network=network_label,
            cwd=str(checked.cwd),
            output=text,
            total_chars=outcome.total_chars,
            trimmed=trimmed,
            chars=outcome.chars,
            env_dropped=[d.describe() for d in environment.call_drops()],
            notes=notes,
            egress=egress,
            checkpoint=checkpoint,
        )

    async def writable_roots(self, caller: Caller) -> set[str]:
        """The real roots of the local sources ``caller`` may write (where a rewind may
        put files back)."""
        state = await self._state.dispatch_state()
        return {
            str(s.real_root)
            for s in state.sources.sources.values()
            if s.connector == "local" and "write" in s.rights_for(caller)
        }

    async def _snapshots(
        self,
        checked: CheckedCommand,
        request: ShellRequest,
        policy: SourcePolicy,
        live: Mapping[str, Any],
    ) -> list[Snapshot] | None:
        """Snapshots, from its start, of the sources a background command may write."""
        limit = checkpoint_limit(live)
        roots = self._checkpoint_roots(checked, request, policy)
        if limit == 0 or not roots:
            return None
        return await self.checkpoints.before(
            roots,
            max_entries=limit,
            call_id=request.call_id,
            conversation_id=request.conversation_id,
        )

    @staticmethod
    def _checkpoint_roots(
        checked: CheckedCommand, request: ShellRequest, policy: SourcePolicy
    ) -> list[Path]:
        """The sources the command may write; none for a proven reader."""
        if proven_read_only(checked.analysis):
            return []
        return writable_roots(policy, request.caller)

    def _checkpointing(
        self,
        cleanup: Callable[[], None],
        snapshots: list[Snapshot],
        request: ShellRequest,
        live: Mapping[str, Any],
    ) -> Callable[[], None]:
        """A background shell's cleanup that also keeps its change set, from its start to
        its end, as one checkpoint of its conversation."""
        scope = CheckpointScope(
            conversation_id=request.conversation_id,
            run_id=request.run_id,
            user_id=request.caller.user_id,
            tool="execute",
        )
        retention = retention_of(live)

        async def keep() -> None:
            try:
                await self.checkpoints.ended(snapshots, request.call_id, scope, retention)
            except Exception:
                log.exception("could not keep the checkpoint of a background shell")

        def both() -> None:
            cleanup()
            task = asyncio.get_running_loop().create_task(keep())
            self._background_checkpoints.add(task)
            task.add_done_callback(self._background_checkpoints.discard)

        return both

    async def sweep_checkpoints(self) -> list[str]:
        """Drop the checkpoints the live retention no longer keeps (``checkpoint_keep_days``
        ages them even when no new checkpoint is kept); a periodic pass. Returns their ids."""
        live = (await self._state.dispatch_state()).live
        return await self.checkpoints.prune(retention_of(live))

    async def settle_checkpoints(self) -> None:
        """Wait until ended background shells' checkpoints are kept, and every kept
        checkpoint's row written."""
        while self._background_checkpoints:
            await asyncio.gather(*list(self._background_checkpoints))
        await self.checkpoints.flush()

    # -- the host plane ---------------------------------------------------------------------

    async def _run_host(
        self,
        request: ShellRequest,
        checked: CheckedCommand,
        pacer: LivePacer,
        on_cancel: OnCancel,
        seconds: int,
        limit: int,
    ) -> ShellOutcome:
        if self.broker is None:
            raise ToolError(
                f"cwd {request.cwd!r} is on the host plane, but no host broker is provisioned "
                "(start-up setting host_broker_socket); run the command in a local source",
                code="host_unavailable",
            )
        environment = build_environment(platform_env={}, home="", call_env=request.env)
        call_env = {k: v for k, v in environment.values.items() if k in request.env}
        stop = asyncio.Event()
        unregister = on_cancel(stop.set)
        try:
            outcome = await self.broker.run(
                request.command,
                cwd=str(checked.cwd),
                limit=seconds,
                env=call_env,
                variables=traced_variables(request.variables),
                secrets=request.declared,
                capture_limit=limit,
                sinks=[pacer.feed],
                stop=stop,
            )
        except BrokerRefused as refused:
            raise PolicyDenied(
                f"the host broker refused the command (rule {refused.rule!r}): {refused.detail}",
                data={"guard": "host_broker", "rule": refused.rule, "word": refused.word},
            ) from None
        except BrokerUnavailable as exc:
            raise ToolError(str(exc), code="host_unavailable") from None
        finally:
            unregister()
            pacer.close()
        text, trimmed = captured_text(outcome.capture, limit)
        notes = []
        if outcome.status == "stopped":
            ceiling = f"{outcome.timeout} s" if outcome.timeout else "its own limit"
            notes.append(
                "Stopped waiting only: the host broker cannot cancel a command in flight, so it "
                f"keeps running on the host until it ends or reaches the broker's timeout of "
                f"{ceiling}. Check its effects before running it again."
            )
        if request.declared and outcome.status != "stopped" and outcome.staged is None:
            notes.append(
                f"The host broker did not confirm the staged variables "
                f"({', '.join(sorted(request.declared))}), so the command ran without them: "
                "the broker predates them; the operator restarts it with this version."
            )
        if outcome.broker_trimmed:
            notes.append(
                f"The broker dropped {outcome.broker_trimmed:,} characters of output that "
                "arrived faster than they could be sent."
            )
        return ShellOutcome(
            status=outcome.status,
            exit_code=outcome.exit_code,
            duration=outcome.duration,
            plane="host",
            confinement=outcome.confinement,
            network="as the host allows",
            cwd=str(checked.cwd),
            output=text,
            total_chars=sum(outcome.chars.values()),
            trimmed=trimmed,
            chars=outcome.chars,
            env_dropped=[d.describe() for d in environment.call_drops()],
            notes=notes,
            host={"roots": outcome.roots, "timeout": outcome.timeout},
        )

    # -- background -------------------------------------------------------------------------

    async def start_background(self, request: ShellRequest) -> tuple[ShellRecord, list[str]]:
        """Start a detached shell; returns its record and notes (dropped env variables)."""
        state = await self._state.dispatch_state()
        policy = _policy(state.sources, request)
        checked = await self._allowed(request, policy)
        if checked.plane == "host":
            raise ToolError(
                "background: true is not available on the host plane: the operator's broker "
                "names no lifetime limit for detached runs. Run it in the foreground (at most "
                "300 s) or in a local source.",
                code="host_background_unavailable",
            )
        live = state.live
        network, _ = self._network(live)
        bridge = None
        limit = float(request.timeout or int(live["background_shell_max_seconds"]))
        if not network:
            bridge, _ = await self._call_bridge(live, request, limit)
        spec, environment, cleanup = self._prepare(checked, request, policy, network, bridge)
        if bridge is not None:
            cleanup = self._closing_bridge(cleanup, bridge)
        try:
            snapshots = await self._snapshots(checked, request, policy, live)
        except (OSError, TooManyEntries):
            snapshots = None  # the shell still runs, uncovered, as a foreground call would
        if snapshots:
            cleanup = self._checkpointing(cleanup, snapshots, request, live)
        launch = ShellLaunch(
            spec=spec,
            user_id=request.caller.user_id,
            conversation_id=request.conversation_id,
            run_id=request.run_id,
            agent=request.agent,
            command=request.command,
            cwd=str(checked.cwd),
            reason=request.reason,
            plane="app",
            confinement=self.confinement,
            limit=limit,
            cleanup=cleanup,
            redact=Redactor(environment.secrets) if environment.secrets else None,
            spawned=bridge.spawned if bridge is not None else lambda: None,
        )
        try:
            with step_span("spawn") as span:
                record = await self.background.start(launch)
                note_spawn(span, "app", self.confinement)
        except BaseException as exc:
            if snapshots:  # not started: its windows must not stay open for ever
                self.checkpoints.release(snapshots, ran=False)
            if isinstance(exc, OSError):
                raise _spawn_failed(exc) from None
            raise
        return record, [d.describe() for d in environment.call_drops()]

    async def close(self) -> None:
        for execution in list(self._foreground):
            execution.request_stop("stopped")
        await self.background.close()
        await self.settle_egress()
        await self.settle_checkpoints()
        self.checkpoints.close()


def _policy(policy: SourcePolicy, request: ShellRequest) -> SourcePolicy:
    return policy.with_sources(request.sources) if request.sources else policy


def _spawn_failed(exc: OSError) -> ToolError:
    return ToolError(f"the command could not be started: {exc}", code="spawn_failed")


def _scope(request: ShellRequest) -> CallScope:
    return CallScope(
        conversation_id=request.conversation_id,
        run_id=request.run_id,
        call_id=request.call_id,
        agent=request.agent,
    )
