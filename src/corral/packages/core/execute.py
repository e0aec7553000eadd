"""The ``execute`` tool, action ``shell``: run a command under the three guards.

The policy hook runs both command guards (analysis, then the URI-policy gate) at the
pipeline's policy step, before any approval is asked, and keeps what it checked on
``ctx.findings`` (:class:`CheckedShellCall`); the handler runs on that, never judging the
command again, then runs it in the foreground or starts a background shell. A call that
waited for approval passes the whole pipeline again when it is approved, so its command is
judged once more then, with the rights of that moment. Action ``skill`` activates a skill bundle
(:class:`~corral.tools.skill_binding.SkillActivator`); every shell call then takes its
:class:`~corral.tools.skill_binding.ShellBinding`: ``${SKILL_DIR}``-family variables (also
substituted in ``cwd``), the skill's folder as a read-and-exec source, and the secrets staged
for the child only (the skill's declared credentials, the run's ticket). A git command in a
drive repository with connected remotes also gets their stored tokens, for its credential
helper only (:mod:`corral.packages.core.git_credentials`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from corral.connect import CredentialStore
from corral.errors import InvalidArguments, ToolError
from corral.packages.core.connect_git import GitRemotes
from corral.packages.core.egress_asker import RunEgressQuestion
from corral.packages.core.git_credentials import mentions_git, staged_tokens
from corral.runtime.workflows import Workflows
from corral.shell.check import CheckedCommand
from corral.shell.records import ShellRecord
from corral.shell.service import ShellOutcome, ShellRequest
from corral.tools.context import CallContext
from corral.tools.results import ResultStatus, ToolResult
from corral.tools.services import Shells
from corral.tools.skill_binding import ShellBinding

__all__ = ["CheckedShellCall", "execute", "execute_policy"]

_STATUS: dict[str, ResultStatus] = {"exited": "ok", "stopped": "stopped", "timed_out": "timed_out"}


def _shells(ctx: CallContext) -> Shells:
    if ctx.services.shells is None:
        raise ToolError("shell execution is not installed on this platform", code="unavailable")
    return ctx.services.shells


def _is_shell(args: Mapping[str, Any]) -> bool:
    return bool(args.get("action", "shell") == "shell")


async def _binding(args: Mapping[str, Any], ctx: CallContext) -> ShellBinding:
    skills = ctx.services.skills
    skill = args.get("skill")
    if skills is None:
        if skill is not None:
            raise ToolError(
                f"skill {skill!r} cannot bind: skills are not installed on this platform; "
                "leave `skill` out",
                code="unavailable",
            )
        return ShellBinding()
    return await skills.binding(ctx, skill)


def _cwd(args: Mapping[str, Any], binding: ShellBinding) -> str | None:
    cwd = args.get("cwd")
    return binding.substitute(cwd) if isinstance(cwd, str) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckedShellCall:
    """What the policy hook checked, kept for the handler of the same call."""

    judged: tuple[Any, ...]
    """The arguments it was reached on (:func:`_judged_arguments`): a stage that rewrote
    them after the policy step makes the handler judge the command itself."""
    binding: ShellBinding
    cwd: str | None
    """``cwd`` with the binding's variables substituted."""
    checked: CheckedCommand


def _judged_arguments(args: Mapping[str, Any]) -> tuple[Any, ...]:
    env = args.get("env")
    frozen_env = tuple(sorted(env.items())) if isinstance(env, dict) else env
    return (args.get("command"), args.get("cwd"), args.get("skill"), frozen_env)


async def execute_policy(args: dict[str, Any], ctx: CallContext) -> None:
    """The pipeline's policy step for ``execute``: refuse before approval is asked."""
    if not _is_shell(args) or not isinstance(args.get("command"), str):
        return
    service = _shells(ctx)
    env = args.get("env")
    if isinstance(env, dict):
        service.check_env(env)
    binding = await _binding(args, ctx)
    policy = ctx.sources.with_sources(binding.sources) if binding.sources else ctx.sources
    cwd = _cwd(args, binding)
    checked = await service.check(args["command"], cwd=cwd, caller=ctx.caller, policy=policy)
    if not checked.verdict.allowed:
        raise checked.verdict.error()
    ctx.findings.put(
        CheckedShellCall(judged=_judged_arguments(args), binding=binding, cwd=cwd, checked=checked)
    )


async def _activate(args: Mapping[str, Any], ctx: CallContext) -> ToolResult:
    name = args.get("skill")
    if not isinstance(name, str) or not name.strip():
        raise InvalidArguments(
            "action 'skill' needs 'skill', the name of the skill to activate (the system "
            "prompt lists them); add it and call again"
        )
    if ctx.services.skills is None:
        raise ToolError("skills are not installed on this platform", code="unavailable")
    return await ctx.services.skills.activate(name.strip(), ctx)


async def execute(args: dict[str, Any], ctx: CallContext) -> ToolResult:
    if not _is_shell(args):
        return await _activate(args, ctx)
    command = args.get("command")
    if not isinstance(command, str) or not command.strip():
        raise InvalidArguments("action 'shell' needs a non-empty 'command'; add it and call again")
    service = _shells(ctx)
    found = ctx.findings.get(CheckedShellCall)
    if found is not None and found.judged == _judged_arguments(args):
        binding, cwd, checked = found.binding, found.cwd, found.checked
    else:  # not through the pipeline's policy step, or arguments changed since
        binding = await _binding(args, ctx)
        cwd, checked = _cwd(args, binding), None
    request = ShellRequest(
        command=command,
        cwd=cwd,
        caller=ctx.caller,
        env=dict(args.get("env") or {}),
        timeout=args.get("timeout"),
        reason=str(args.get("reason") or ""),
        agent=ctx.agent,
        profile=ctx.profile,
        workflow=await _workflow(ctx),
        conversation_id=ctx.conversation_id,
        run_id=ctx.run_id,
        call_id=ctx.call_id,
        declared={**await _git_tokens(command, cwd, ctx), **binding.secrets},
        sources=binding.sources,
        variables=binding.env,
        checked=checked,
        egress_question=RunEgressQuestion.of(ctx),
    )
    if args.get("background"):
        record, dropped = await service.start_background(request)
        return _background_result(record, dropped)
    outcome = await service.run(request, on_cancel=ctx.cancellation.on_cancel, live_sink=ctx.output)
    return _foreground_result(outcome, request)


async def _workflow(ctx: CallContext) -> tuple[str, ...]:
    """The id and title of the workflow whose run makes this call, looked up only while the
    egress policy has workflow sections."""
    egress = ctx.live.get("egress")
    workflows = ctx.services.get(Workflows)
    if not (isinstance(egress, Mapping) and egress.get("workflows")) or workflows is None:
        return ()
    if ctx.conversation_id is None:
        return ()
    return await workflows.store.names_of_conversation(ctx.conversation_id)


async def _git_tokens(command: str, cwd: str | None, ctx: CallContext) -> dict[str, str]:
    remotes = ctx.services.get(GitRemotes)
    if remotes is None or not mentions_git(command):
        return {}
    return await staged_tokens(
        remotes=await remotes.rows(),
        credentials=ctx.services.get(CredentialStore),
        caller=ctx.caller,
        policy=ctx.sources,
        cwd=cwd,
        command=command,
    )


def _footer(outcome: ShellOutcome, request: ShellRequest) -> str:
    where = f"cwd {outcome.cwd} · confinement {outcome.confinement} · network {outcome.network}"
    took = f"{outcome.duration:.2f} s"
    if outcome.status == "timed_out":
        return (
            f"[timed out after {took} (timeout {request.timeout or 120} s): the command's whole "
            f"process group was ended; the output above is what it printed until then. Use "
            f"background: true for longer work · {where}]"
        )
    if outcome.status == "stopped":
        if outcome.plane == "host":
            return f"[stopped waiting after {took} · {where}]"
        return (
            f"[stopped after {took}: the command's whole process group was ended (SIGTERM, "
            f"then SIGKILL); the output above is what it printed until then · {where}]"
        )
    return f"[exit code {outcome.exit_code} after {took} · {where}]"


def _foreground_result(outcome: ShellOutcome, request: ShellRequest) -> ToolResult:
    body = outcome.output.rstrip("\n") if outcome.output else "(no output)"
    parts = [body, _footer(outcome, request)]
    notes = list(outcome.notes)
    if outcome.env_dropped:
        notes.append("Environment variables not passed: " + ", ".join(outcome.env_dropped) + ".")
    parts += notes
    status: ResultStatus = _STATUS[outcome.status]
    data: dict[str, Any] = {
        "command": request.command,
        "reason": request.reason,
        "cwd": outcome.cwd,
        "status": outcome.status,
        "exit_code": outcome.exit_code,
        "duration_ms": round(outcome.duration * 1000, 1),
        "plane": outcome.plane,
        "confinement": outcome.confinement,
        "network": outcome.network,
        "output_chars": outcome.total_chars,
        "stdout_chars": outcome.chars.get("stdout", 0),
        "stderr_chars": outcome.chars.get("stderr", 0),
        "trimmed_chars": outcome.trimmed,
        "env_dropped": outcome.env_dropped,
        "notes": notes,
    }
    if outcome.host is not None:
        data["host"] = outcome.host
    if outcome.egress is not None:
        data["egress"] = outcome.egress
    if outcome.checkpoint is not None:
        data["checkpoint"] = outcome.checkpoint
    return ToolResult.text_result(
        "\n".join(parts),
        data=data,
        status=status,
        is_error=outcome.status != "exited",
        error_code=None if outcome.status == "exited" else outcome.status,
        keep="tail",
    )


def _background_result(record: ShellRecord, dropped: list[str]) -> ToolResult:
    lines = [
        f"Started background shell {record.id} (confinement {record.confinement}, cwd "
        f"{record.cwd}). It keeps running after this turn; when it ends, a completion report "
        "with its exit code and output arrives in this conversation by itself. There is "
        "nothing to poll: end your turn or continue with other work, and do not start it again.",
        f"Status: {record.status_uri} · full output log: {record.output_uri}",
    ]
    if dropped:
        lines.append("Environment variables not passed: " + ", ".join(dropped) + ".")
    return ToolResult.text_result(
        "\n".join(lines),
        data={
            "shell_id": record.id,
            "status": "running",
            "status_uri": record.status_uri,
            "output_uri": record.output_uri,
            "command": record.command,
            "reason": record.reason,
            "cwd": record.cwd,
            "confinement": record.confinement,
            "env_dropped": dropped,
        },
    )
