"""Filling a conversation with a long, regular history, shared by the prompt benchmarks."""

from __future__ import annotations

from corral.runtime.runtime import Runtime
from corral.runtime.timeline import NewRow


async def fill(rt: Runtime, conversation_id: str, rows: int, *, tool: str) -> None:
    """Append ``rows`` rows: rounds of question, answer, a ``tool`` call (id ``k<i>``) and
    its 200-character result."""
    ok = {"content": [{"type": "text", "text": "x" * 200}], "status": "ok"}
    batch: list[NewRow] = []
    for i in range(rows // 4):
        batch += [
            NewRow(kind="user_message", data={"text": f"question {i}"}),
            NewRow(kind="model_turn", data={"text": f"answer {i}"}),
            NewRow(kind="tool_call", call_id=f"k{i}", data={"tool": tool, "args": {"text": "x"}}),
            NewRow(kind="tool_result", call_id=f"k{i}", data={"tool": tool, "result": ok}),
        ]
        if len(batch) >= 2_000:
            await rt.append(conversation_id, batch)
            batch = []
    if batch:
        await rt.append(conversation_id, batch)
