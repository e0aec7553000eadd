"""The prompt, rebuilt from the timeline for every step.

``build`` reads only the rows appended since the last build of that conversation, applies
the *overlays* (functions from rows to prompt rows, e.g. issue 7's compact_history trims;
they never see or touch the system part), turns rows into pydantic-ai messages reusing what
did not change, renders the system part, and hands the visible tools' full schemas over as
tool definitions (those the tool planner, tool_search, does not defer). A warm build of a
10,000-row conversation takes a few milliseconds (``bench/loop.py`` measures it).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from corral.policy.identity import Caller
from corral.policy.sources import SourcePolicy
from corral.runtime.background import BackgroundWorkSource
from corral.runtime.conversations import ConversationStore
from corral.runtime.models.providers import MediaSupport
from corral.runtime.prompt.attachments import AttachmentReader
from corral.runtime.prompt.media import MediaReader
from corral.runtime.prompt.system import PromptView, StateBlock, background_block, system_parts
from corral.runtime.runs import RunRecord
from corral.runtime.timeline import TimelineRow
from corral.tools.contract import ToolSpec
from corral.tools.registry import LoadedTool

if TYPE_CHECKING:
    from pydantic_ai.messages import InstructionPart, ModelMessage
    from pydantic_ai.models import ModelRequestParameters
    from pydantic_ai.tools import ToolDefinition

    from corral.runtime.prompt.history import History

__all__ = ["Overlay", "Prompt", "PromptBuilder", "PromptRequest", "ToolPlanner"]

Overlay = Callable[[Sequence[TimelineRow], PromptView], Sequence[TimelineRow]]
"""Maps the timeline to the rows the model sees this step; return rows unchanged where
nothing applies (identical row objects keep their cached messages)."""


class ToolPlanner(Protocol):
    """Chooses which visible tools the model gets in full this step (tool_search)."""

    async def plan(
        self, tools: Sequence[LoadedTool], view: PromptView, pinned: Sequence[str]
    ) -> tuple[Sequence[LoadedTool], str | None]:
        """The tools shown in full, and a system prompt block naming the others (or None)."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptRequest:
    conversation_id: str
    run: RunRecord
    agent: str
    instructions: str
    caller: Caller
    tools: Sequence[LoadedTool]
    media: MediaSupport
    sources: SourcePolicy
    live: Mapping[str, Any]
    background: Sequence[BackgroundWorkSource] = ()
    pinned_tools: Sequence[str] = ()
    """Tools the agent always gets in full, never deferred by tool_search."""
    refresh: bool = False
    """Read the store for rows written elsewhere (a run's first step does)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Prompt:
    messages: list[ModelMessage]
    parameters: ModelRequestParameters
    instructions: list[InstructionPart]

    @property
    def system(self) -> str:
        return "\n\n".join(part.content for part in self.instructions)


class PromptBuilder:
    def __init__(self, conversations: ConversationStore, *, cached_conversations: int = 64) -> None:
        self._conversations = conversations
        self._histories: OrderedDict[str, History] = OrderedDict()
        self._capacity = cached_conversations
        self._tool_defs: dict[str, tuple[ToolSpec, ToolDefinition]] = {}
        self.reader = MediaReader()
        self.state_blocks: list[StateBlock] = []
        self.overlays: list[Overlay] = []
        self.attachments: AttachmentReader | None = None
        """Expands ``⟦fs:read:URI⟧`` in a person's message (set by the drive package)."""
        self.tool_planner: ToolPlanner | None = None
        """Defers tools beyond the core set when their schemas crowd the context."""

    def set_attachment_reader(self, reader: AttachmentReader) -> None:
        """Read the files a person's message refers to with ``reader``."""
        self.attachments = reader

    def set_tool_planner(self, planner: ToolPlanner) -> None:
        """Let ``planner`` choose the tools given in full each step."""
        self.tool_planner = planner

    def add_state_block(self, block: StateBlock) -> None:
        """Add a block to the state section of every system prompt (in order of adding)."""
        self.state_blocks.append(block)

    def add_overlay(self, overlay: Overlay) -> None:
        """Apply ``overlay`` to the history of every prompt, after those added before."""
        self.overlays.append(overlay)

    async def history(self, conversation_id: str, *, refresh: bool = False) -> History:
        """The conversation's rows. The store is read (incrementally) for a conversation not
        seen yet, on ``refresh``, or when rows may have come from elsewhere; rows this
        process stores reach the cache through :meth:`observe`."""
        history = self._histories.get(conversation_id)
        if history is None:
            # Imported here, as in the methods below: the history renders pydantic-ai
            # messages, and the platform builds this object even for commands that never
            # build a prompt.
            from corral.runtime.prompt.history import History

            history = History()
            history.stale = True
            self._histories[conversation_id] = history
            while len(self._histories) > self._capacity:
                self._histories.popitem(last=False)
        else:
            self._histories.move_to_end(conversation_id)
        if refresh or history.stale:
            history.stale = False
            history.extend(
                await self._conversations.rows_in_bulk(conversation_id, after=history.last_seq)
            )
        return history

    def observe(self, conversation_id: str, rows: Sequence[TimelineRow]) -> None:
        """Rows this process just stored; a gap means others wrote too: read them next time."""
        history = self._histories.get(conversation_id)
        if history is None or not rows:
            return
        if not history.stale and rows[0].seq == history.last_seq + 1:
            history.extend(rows)
        else:
            history.stale = True

    def invalidate(self, conversation_id: str) -> None:
        """Rows may have been stored by another process: read the store at the next build."""
        history = self._histories.get(conversation_id)
        if history is not None:
            history.stale = True

    def forget(self, conversation_id: str) -> None:
        self._histories.pop(conversation_id, None)

    def tool_definitions(self, tools: Sequence[LoadedTool]) -> list[ToolDefinition]:
        from pydantic_ai.tools import ToolDefinition

        definitions = []
        for tool in tools:
            cached = self._tool_defs.get(tool.name)
            if cached is None or cached[0] is not tool.spec:
                schema = tool.spec.model_schema()
                definition = ToolDefinition(
                    name=schema["name"],
                    description=schema["description"],
                    parameters_json_schema=schema["input_schema"],
                )
                cached = self._tool_defs[tool.name] = (tool.spec, definition)
            definitions.append(cached[1])
        return definitions

    async def build(self, request: PromptRequest) -> Prompt:
        from pydantic_ai.models import ModelRequestParameters

        from corral.runtime.prompt.history import RenderContext

        history = await self.history(request.conversation_id, refresh=request.refresh)
        view = PromptView(
            conversation_id=request.conversation_id,
            run=request.run,
            caller=request.caller,
            agent=request.agent,
            rows=history.rows,
            live=request.live,
        )
        rows: Sequence[TimelineRow] = history.rows
        for overlay in self.overlays:
            rows = overlay(rows, view)
        context = RenderContext(
            media=request.media, reader=self.reader, caller=request.caller, sources=request.sources
        )
        messages = history.messages(rows, context)
        tools, deferred = request.tools, None
        if self.tool_planner is not None and tools:
            tools, deferred = await self.tool_planner.plan(tools, view, request.pinned_tools)
        instructions = await system_parts(
            instructions=request.instructions,
            blocks=self.state_blocks,
            view=view,
            background=await background_block(request.background, request.conversation_id),
            deferred_tools=deferred,
        )
        parameters = ModelRequestParameters(
            function_tools=self.tool_definitions(tools),
            allow_text_output=True,
            instruction_parts=instructions,
        )
        return Prompt(messages=messages, parameters=parameters, instructions=instructions)
