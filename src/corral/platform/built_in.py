"""The built-in package's features, built by the composition root: the services its native
tools use and their registrations on the runtime.

The package declares its tools and handlers; this module, in the platform layer, builds
what they call and what the runtime runs beside them, so the package stays below the
channels and the runtime lists are filled in one place. Installed as the built-in
package's install hook (all of it, or the package is left out, named): web access
(web_fetch, web_search), the shell service (execute; the sandbox probed at open, the
service built when first needed: see :mod:`~corral.platform.shells_on_demand`), the
credential store (web_search keys, connect), workflows with their scheduler and webhooks
(built when first needed, the scheduler started when the process hosts: see
:mod:`~corral.platform.workflows_on_demand`), the channels with their row observers and
delivery (built when first needed: see :mod:`~corral.platform.channels_on_demand`), and the
services of ask_question, todos and compact_history with their parts of the prompt (the goal
state block, the context map, the compaction overlay) and the run-end hook that closes the
questions of a run that ended; the delegate tool's service (built when first needed: see
:mod:`~corral.platform.delegation_on_demand`); and skills (the prompt's list, activation
through execute, the run's ticket).
"""

from __future__ import annotations

from sqlalchemy import select, update

from corral.connect import CredentialKey, CredentialStore
from corral.errors import NotFound
from corral.packages.core.connect_git import GitRemotes
from corral.packages.core.connect_sources import SourceMounts
from corral.packages.core.mcp_servers import McpServers
from corral.platform.channels_on_demand import ChannelsOnDemand
from corral.platform.delegation_on_demand import DelegationOnDemand
from corral.platform.shells_on_demand import ShellsOnDemand, check_egress_live
from corral.platform.workflows_on_demand import WorkflowsOnDemand
from corral.policy.identity import Caller
from corral.runtime.compaction import Compactions
from corral.runtime.decision_sweep import DecisionSweep
from corral.runtime.goals import Goals
from corral.runtime.package_setup import Installed, PackageSetup
from corral.runtime.questions import Questions
from corral.runtime.rewinds import RewindOverlay
from corral.runtime.runs import TERMINAL
from corral.runtime.runtime import Runtime
from corral.runtime.skills import SkillCatalog, Skills, SkillsBlock
from corral.runtime.skills.trust import SkillTrust
from corral.runtime.tool_search import ToolSearch
from corral.shell.setup import probe_sandbox
from corral.store import context_tables as ct
from corral.store import runtime_tables as rt_tables
from corral.store.tables import utcnow
from corral.tools.services import Services
from corral.web.access import WebAccess

__all__ = ["BUILT_IN", "install_built_in"]

BUILT_IN = "core"
"""The package whose features this module builds."""


async def install_built_in(setup: PackageSetup) -> Installed:
    kernel, runtime = setup.kernel, setup.runtime
    # Search provider keys may come from the settings file; keep them out of every result.
    keys = (kernel.settings.tavily_api_key, kernel.settings.brave_api_key)
    kernel.config.add_secrets([key.get_secret_value() for key in keys if key is not None])
    # Every stored credential this process reads or writes is redacted from results too.
    credentials = CredentialStore(
        kernel.sessions,
        CredentialKey.in_private_dir(kernel.settings.private_dir),
        on_value=kernel.config.add_secrets,
    )

    # The sandbox is probed now; the service is built on first need (with egress enabled).
    shells = ShellsOnDemand(kernel, credentials, await probe_sandbox(kernel.settings))
    runtime.add_background_work(shells)
    runtime.on_host.append(shells.host)
    kernel.admin.check_live("egress", check_egress_live)

    questions, goals, compactions = Questions(runtime), Goals(runtime), Compactions(runtime)
    runtime.prompt.add_state_block(goals.block)
    runtime.prompt.add_state_block(compactions.context_map)
    rewinds = RewindOverlay()
    compactions.context_map.rewinds = rewinds
    runtime.prompt.add_overlay(rewinds)  # before the trims: rewound rows are gone
    runtime.prompt.add_overlay(compactions.overlay)
    runtime.run_end_hooks.append(questions.close_for_run)
    tool_search = ToolSearch(runtime)
    runtime.prompt.set_tool_planner(tool_search)

    workflows = WorkflowsOnDemand(runtime, goals)
    runtime.on_host.append(workflows.start_scheduler)
    runtime.on_tick.append(workflows.tick)  # on a cluster: the workers' periodic task

    mcp_servers = McpServers(kernel, credentials=credentials)
    skills = _skills(setup, credentials)
    channels = ChannelsOnDemand(
        runtime, credentials, questions=questions, workflows=workflows.workflows
    )
    runtime.row_observers.append(channels.observe_rows)
    runtime.remote_row_observers.append(channels.poke)
    runtime.run_end_hooks.append(channels.deliver_workflow_run)
    # The delegate tool's run-end hook runs after the questions' and the channels'.
    delegation = DelegationOnDemand(runtime)
    runtime.on_tick.append(delegation.sweep)
    # Checkpoint retention by age applies even while no new checkpoint is kept.
    runtime.on_tick.append(shells.sweep_checkpoints)
    decision_sweep = DecisionSweep(runtime, also=[delegation.sweep, shells.sweep_checkpoints])

    async def start_decision_sweep() -> None:
        decision_sweep.start()

    runtime.on_host.append(start_decision_sweep)
    runtime.on_tick.append(decision_sweep.tick)

    runtime.on_host.append(channels.host)

    async def start() -> None:
        await credentials.all_values()
        await mcp_servers.restore()
        await _close_orphaned_questions(setup)
        await shells.start()
        await channels.start()

    return Installed(
        services=Services(
            web=WebAccess(),
            shells=shells,
            questions=questions,
            goals=goals,
            compactions=compactions,
            runs=delegation,
            workflows=workflows,
            credentials=credentials,
            skills=skills,
            conversation_access=ConversationReaders(runtime),
            extra={
                Skills: skills,
                McpServers: mcp_servers,
                SourceMounts: SourceMounts(kernel),
                GitRemotes: GitRemotes(kernel, credentials),
                ToolSearch: tool_search,
            },
            deferred={
                **channels.deferred(),
                **shells.deferred(),
                **workflows.deferred(),
                **delegation.deferred(),
            },
        ),
        start=[start],
        close=[
            shells.close,
            workflows.close,
            decision_sweep.close,
            delegation.close,
            mcp_servers.close,
            channels.close,
        ],
    )


class ConversationReaders:
    """Who may read a conversation, and so its shells' status and output: its owner or a
    holder of ``conversations.manage`` (stopping a shell stays with who started it)."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    async def can_read(self, conversation_id: str, caller: Caller) -> bool:
        try:
            conversation = await self._runtime.conversations.get(conversation_id)
            conversation.check_access(caller)
        except NotFound:
            return False
        return True


def _skills(setup: PackageSetup, credentials: CredentialStore) -> Skills:
    """Skills from every package's ``skills/`` folder, the settings folders and the drive,
    listed in the prompt; their activations and the run's ticket end with the run."""
    kernel, runtime = setup.kernel, setup.runtime
    settings = kernel.settings
    catalog = SkillCatalog(
        packages={
            name: package.path
            for name, package in kernel.registry.packages.items()
            if package.origin != "mcp"
        },
        drive_dir=settings.drive_dir,
        folders=settings.skill_paths,
        fixed=[n for n, p in kernel.registry.packages.items() if p.origin == "entry_point"],
    )
    skills = Skills(
        catalog=catalog,
        tickets=kernel.identity.tickets,
        state=kernel.config.dispatch_state,
        credentials=lambda: credentials,
        add_secrets=kernel.config.add_secrets,
        api_url=settings.api_url or "",
        api_url_fixed=settings.api_url is not None,
        trust=SkillTrust(settings.private_dir / "skill-trust.json"),
    )
    skills.serving_at(settings.host, settings.port)
    runtime.prompt.add_state_block(SkillsBlock(skills))
    runtime.run_end_hooks.append(skills.end_run)
    return skills


async def _close_orphaned_questions(setup: PackageSetup) -> None:
    """Runs that start-up recovery ended before the run-end hook existed leave no question
    open behind them."""
    ended = select(rt_tables.Run.id).where(rt_tables.Run.status.in_(list(TERMINAL)))
    async with setup.kernel.sessions.begin() as session:
        await session.execute(
            update(ct.Question)
            .where(ct.Question.status == "open", ct.Question.run_id.in_(ended))
            .values(status="closed", note="the run ended before an answer", answered_at=utcnow())
        )
