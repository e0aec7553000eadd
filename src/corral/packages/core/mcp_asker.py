"""What a connected MCP server asks during a call, put to the run the call belongs to.

Elicitation becomes a question to the person who started the run (see
:mod:`corral.runtime.questions.elicitation`), answerable with ``corral questions answer``
or over HTTP; the call's live output says which question waits. The answer (accept with
content checked against the requested schema, decline, cancel) goes back to the server. A
question not answered within nine tenths of the call's time is closed (expired) and the
server told ``decline``; a stopped call or a run that ends first closes it, and the server
is told ``cancel``. A URL elicitation's link is shown to the person only: the model never
sees it.

Sampling, when an admin allowed it for the server, is answered by the run's own model and
counted as the run's model use (``mcp.sampling``).
"""

from __future__ import annotations

import asyncio
import secrets
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from corral.runtime.questions import AskedQuestion, Questions
from corral.runtime.questions.elicitation import (
    ELICITATION_MARK,
    elicited_answer,
    form_questions,
    url_questions,
)
from corral.service_protocols import UsageRecord
from corral.store.tables import utcnow
from corral.tools.context import CallContext

if TYPE_CHECKING:
    from mcp.types import (
        CreateMessageRequestParams,
        CreateMessageResult,
        ElicitRequestParams,
        ElicitResult,
        ErrorData,
    )

__all__ = ["RunAsker"]

_FIRST_LOOK = 0.05
_LONGEST_LOOK = 1.0
"""Seconds between looks at the question for its answer: doubling up to this."""


def _error(message: str) -> ErrorData:
    from mcp.types import INVALID_REQUEST, ErrorData

    return ErrorData(code=INVALID_REQUEST, message=message)


class RunAsker:
    """The person and the model behind one call of an MCP tool (``ctx``); a question waits
    at most ``wait_seconds``."""

    def __init__(self, ctx: CallContext, *, wait_seconds: float) -> None:
        self._ctx = ctx
        self._wait = wait_seconds

    @property
    def person(self) -> str:
        return self._ctx.caller.user_id

    async def elicit(self, server: str, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        from mcp.types import ElicitRequestURLParams, ElicitResult

        ctx = self._ctx
        questions = ctx.services.get(Questions)
        if questions is None or ctx.run_id is None or ctx.conversation_id is None:
            return _error(
                "no person can be asked: this call is not part of a conversation run; take "
                "what you need as tool arguments"
            )
        if isinstance(params, ElicitRequestURLParams):
            asked = url_questions(server, params.message, params.url)
        else:
            asked = form_questions(server, params.message, params.requested_schema)
        record = await questions.store.create(
            conversation_id=ctx.conversation_id,
            run_id=ctx.run_id,
            call_id=f"{ctx.call_id}{ELICITATION_MARK}{secrets.token_hex(4)}",
            user_id=ctx.caller.user_id,
            questions=[AskedQuestion.from_json(q) for q in asked],
            # Past this the sweep ends it, should this process die while it waits.
            expires_at=utcnow() + timedelta(seconds=self._wait),
        )
        ctx.output(
            "stdout",
            f"{server} asks you a question ({record.id}): answer with "
            f"`corral questions answer {record.id} …` (decline: `… {record.id} decline`)\n",
        )
        pause = _FIRST_LOOK
        deadline = asyncio.get_running_loop().time() + self._wait
        while True:
            current = await questions.store.get(record.id)
            if current.status == "answered" and current.answers is not None:
                schemas = [q.schema for q in current.questions]
                action, content = elicited_answer(schemas, list(current.answers))
                ctx.output("stdout", f"{server}'s question answered: {action}\n")
                return ElicitResult(action=action, content=content)
            if current.status != "open":
                return ElicitResult(action="cancel")
            now = asyncio.get_running_loop().time()
            if ctx.cancellation.cancelled:
                if await questions.store.close(record.id, "the call was stopped"):
                    return ElicitResult(action="cancel")
                continue  # answered just now: read it
            if now >= deadline:
                if await questions.store.expire(record.id, "expired: no answer in time"):
                    ctx.output("stdout", f"{server}'s question expired; it was declined\n")
                    return ElicitResult(action="decline")
                continue
            await asyncio.sleep(min(pause, max(deadline - now, 0.0)))
            pause = min(pause * 2, _LONGEST_LOOK)

    async def sample(
        self, server: str, params: CreateMessageRequestParams
    ) -> CreateMessageResult | ErrorData:
        from mcp.types import CreateMessageResult, TextContent
        from pydantic_ai.direct import model_request
        from pydantic_ai.exceptions import AgentRunError, ModelAPIError, UserError
        from pydantic_ai.messages import TextPart

        ctx = self._ctx
        held: Any = ctx.services.conversation_model
        recorder = ctx.services.usage
        if held is None or recorder is None:
            return _error(
                "sampling needs the model of a conversation run, and this call is not part of "
                "one; do the work without it"
            )
        try:
            response = await model_request(
                held.model,
                _sampling_messages(params),
                model_settings={"max_tokens": params.max_tokens},
            )
        except (ModelAPIError, AgentRunError, UserError) as exc:
            return _error(f"the run's model ({held.spec}) failed: {exc}")
        usage = response.usage
        await recorder.record(
            UsageRecord(
                source="mcp.sampling",
                model=str(held.spec),
                user_id=ctx.caller.user_id,
                conversation_id=ctx.conversation_id,
                run_id=ctx.run_id,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
            )
        )
        said = "".join(p.content for p in response.parts if isinstance(p, TextPart))
        return CreateMessageResult(
            role="assistant",
            content=TextContent(text=said),
            model=str(held.spec),
            stop_reason="endTurn",
        )


def _sampling_messages(params: CreateMessageRequestParams) -> list[Any]:
    """The server's messages as pydantic-ai's: text only (other content is named, not sent)."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart

    messages: list[Any] = []
    for number, message in enumerate(params.messages):
        blocks = message.content if isinstance(message.content, list) else [message.content]
        text = "\n".join(
            str(getattr(b, "text", None) or f"[{getattr(b, 'type', 'content')} not sent]")
            for b in blocks
        )
        if message.role == "assistant":
            messages.append(ModelResponse(parts=[TextPart(text)]))
        else:
            instructions = params.system_prompt if number == 0 else None
            messages.append(ModelRequest.user_text_prompt(text, instructions=instructions))
    return messages
