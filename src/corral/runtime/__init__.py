"""The agent runtime: conversations, the loop, runs that park and resume, reports, inbox.

Built on the kernel by the composition root (``platform.runtime``); ``platform.chat(...)``
is the short way in. Module map:

- ``timeline``, ``conversations``, ``appends``: rows with sequence numbers, the store;
- ``runs``, ``turns``, ``loop``, ``calls``, ``endings``: a run's life, the step loop
  (``advance_run``, the job function), concurrent tool calls, how runs end;
- ``parking``: waits (approvals now, questions later) and the answers that resume a run;
- ``reports``, ``inbox``, ``deliveries``: background reports and agent messages queued
  until their conversation is free;
- ``prompt/``: the prompt rebuilt from the timeline each step; ``models/``: model strings;
- ``host``: the state and plumbing the modules share (a :class:`RunHost`); ``runtime``: the
  facade (a RunHost plus the Python API); ``jobs``, ``events``, ``recovery``, ``workers``;
- ``package_setup``: what a package's install hook receives and returns;
- ``questions/``, ``goals/``, ``compaction/``: the services of ask_question, todos and
  compact_history (and /summarize), installed by the built-in package's install hook.

Extension points (the context tools use all three):

- state blocks: ``runtime.prompt.add_state_block(block)`` — ``await block.render(view)``
  returns text for the system prompt's state section (goal, todos, closed cycles line);
- overlays: ``runtime.prompt.add_overlay(fn)`` — ``fn(rows, view) -> rows`` applied to the
  history every step, never to the system part (compact_history);
- waits: a handler returns ``ToolResult.wait_for("question", qid, text)`` (a typed
  :class:`~corral.tools.results.Waiting`) and the run parks;
  ``runtime.resolve_wait(run_id, call_id, result)`` answers it; ``runtime.run_end_hooks``
  close what an ended run left open;
- background work: ``runtime.add_background_work(source)`` lists running work each step.
"""

from corral.runtime.host import RunHost
from corral.runtime.models import MediaSupport, ModelRegistry
from corral.runtime.prompt import Overlay, PromptView, StateBlock
from corral.runtime.results import ChatTurn, RunResult
from corral.runtime.runs import RunRecord, RunStatus, Wait
from corral.runtime.runtime import Runtime
from corral.runtime.timeline import NewRow, TimelineRow

__all__ = [
    "ChatTurn",
    "MediaSupport",
    "ModelRegistry",
    "NewRow",
    "Overlay",
    "PromptView",
    "RunHost",
    "RunRecord",
    "RunResult",
    "RunStatus",
    "Runtime",
    "StateBlock",
    "TimelineRow",
    "Wait",
]
