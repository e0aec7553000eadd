"""compact_history's service: trims as overlay cards, "Show full", and /summarize.

Nothing in the stored timeline changes: a compaction is a card row the overlay reads, and
switching it off or on again is another card. Tokens are counted with a real tokenizer
(:mod:`corral.runtime.compaction.tokens`) over the text the model reads before and after.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from corral.errors import InvalidArguments, NotFound, ToolError
from corral.runtime.compaction.cards import CARD, TOGGLE, Compaction, Target
from corral.runtime.compaction.context_map import ContextMap
from corral.runtime.compaction.overlay import CompactionOverlay
from corral.runtime.compaction.targets import Resolved, resolve_targets
from corral.runtime.compaction.tokens import count_tokens, tokenizer_name
from corral.runtime.compaction.trims import prompt_text, trim_row
from corral.runtime.timeline import NewRow
from corral.store import runtime_tables as rt_tables
from corral.tools.results import TextBlock, ToolResult
from corral.tools.services import CallScope

if TYPE_CHECKING:
    from corral.runtime.host import RunHost

__all__ = ["Compactions"]


def _counted(draft: Compaction, resolved: Sequence[Resolved]) -> Compaction:
    targets = []
    for position, (target, found) in enumerate(zip(draft.targets, resolved, strict=True)):
        before = count_tokens(prompt_text(found.row))
        after = count_tokens(prompt_text(trim_row(found.row, draft, position)))
        targets.append(replace(target, tokens_before=before, tokens_after=after))
    return replace(
        draft,
        targets=tuple(targets),
        tokens_before=sum(t.tokens_before for t in targets),
        tokens_after=sum(t.tokens_after for t in targets),
        tokenizer=tokenizer_name(),
    )


def _describe(compaction: Compaction) -> str:
    items = "; ".join(
        f"{t.ref} ({t.label}) {t.tokens_before:,} → {t.tokens_after:,} tokens"
        for t in compaction.targets
    )
    return (
        f"Compaction {compaction.id} ({compaction.action}) applies from your next step: "
        f"{items}. About {compaction.tokens_saved:,} tokens saved ({compaction.tokenizer}). "
        "The stored conversation is unchanged; the user can show it in full again."
    )


class Compactions:
    def __init__(self, runtime: RunHost) -> None:
        self._rt = runtime
        self.overlay = CompactionOverlay()
        self.context_map = ContextMap(self.overlay)

    # -- the tool's side ------------------------------------------------------------------

    async def compact(self, args: Mapping[str, Any], ctx: CallScope) -> ToolResult:
        """One compact_history call: check every target, count, store the card."""
        if ctx.conversation_id is None:
            raise ToolError(
                "compact_history trims a conversation's history, and this call has none",
                code="no_conversation",
            )
        action = args["action"]
        summary = str(args.get("summary") or "").strip() or None
        if action == "summarize" and summary is None:
            raise ToolError(
                'action "summarize" needs `summary`: the text that stands in for the targets',
                code="summary_required",
            )
        if action != "summarize" and summary is not None:
            raise InvalidArguments(
                f'`summary` is only used with action "summarize", not {action!r}; drop it or '
                'use "summarize"'
            )
        resolved = await resolve_targets(
            self._rt.kernel.sessions, ctx.conversation_id, args["targets"]
        )
        await self._pre_compact(ctx.conversation_id, args)
        draft = Compaction(
            id="cp_" + secrets.token_hex(6),
            source="compact_history",
            action=action,
            targets=tuple(
                Target(seq=r.row.seq, kind=r.row.kind, tool_use_id=r.tool_use_id, tool=r.tool)
                for r in resolved
            ),
            summary=summary,
            keep_chars=int(args.get("keep_chars", 1000)),
            reason=" ".join(str(args.get("reason") or "").split()),
            by="agent",
            call_id=ctx.call_id,
        )
        compaction = await asyncio.to_thread(_counted, draft, resolved)
        row = NewRow(
            kind="card",
            run_id=ctx.run_id,
            user_id=ctx.caller.user_id,
            call_id=ctx.call_id,
            data=compaction.card(),
        )
        await self._rt.append(ctx.conversation_id, [row])
        return ToolResult(
            content=[TextBlock(_describe(compaction))],
            data={"compaction": compaction.to_json()},
        )

    async def _pre_compact(self, conversation_id: str, args: Mapping[str, Any]) -> None:
        """The PreCompact hooks (trigger "auto": the agent compacts); a block refuses."""
        hooks = self._rt.hooks
        if hooks is None or not hooks.configured:
            return
        outcome = await hooks.run(
            "PreCompact",
            {
                "session_id": conversation_id,
                "trigger": "auto",
                "custom_instructions": str(args.get("reason") or ""),
            },
        )
        if outcome.blocked:
            raise ToolError(f"the compaction was refused: {outcome.reason}", code="hook_blocked")

    # -- people ---------------------------------------------------------------------------

    async def _cards(self, conversation_id: str) -> list[tuple[Compaction, bool]]:
        c = rt_tables.ConversationRow
        query = (
            select(c.seq, c.data)
            .where(c.conversation_id == conversation_id, c.kind == "card")
            .order_by(c.seq)
        )
        found: dict[str, Compaction] = {}
        applied: dict[str, bool] = {}
        async with self._rt.kernel.sessions() as session:
            for seq, data in await session.execute(query):
                kind = data.get("card") if isinstance(data, dict) else None
                if kind == CARD:
                    compaction = Compaction.from_card(data, card_seq=seq)
                    found[compaction.id] = compaction
                    applied[compaction.id] = compaction.applied
                elif kind == TOGGLE and data.get("id") in found:
                    applied[data["id"]] = bool(data.get("applied"))
        return [(compaction, applied[compaction.id]) for compaction in found.values()]

    async def list_compactions(
        self, conversation_id: str, *, user: str | None = None
    ) -> list[dict[str, Any]]:
        """Every compaction of the conversation, oldest first, with whether it applies now."""
        await self._rt.conversation(conversation_id, user=user)
        return [c.to_json(applied=on) for c, on in await self._cards(conversation_id)]

    async def set_applied(
        self,
        conversation_id: str,
        compaction_id: str,
        applied: bool,
        *,
        user: str | None = None,
    ) -> dict[str, Any]:
        """Switch one compaction off ("Show full") or on again; the stored rows never change."""
        await self._rt.conversation(conversation_id, user=user)
        caller = await self._rt.kernel.caller(user)
        current = {c.id: (c, on) for c, on in await self._cards(conversation_id)}
        if compaction_id not in current:
            raise NotFound(
                f"no compaction {compaction_id!r} in conversation {conversation_id!r}; "
                f"`corral compactions list {conversation_id}` shows them"
            )
        compaction, on = current[compaction_id]
        if on != applied:
            await self._toggle(conversation_id, compaction_id, applied, caller.name, caller.user_id)
        return compaction.to_json(applied=applied)

    async def show_full(
        self, conversation_id: str, *, user: str | None = None
    ) -> list[dict[str, Any]]:
        """Switch every applied compaction off: the model reads the whole history again."""
        await self._rt.conversation(conversation_id, user=user)
        caller = await self._rt.kernel.caller(user)
        for compaction, on in await self._cards(conversation_id):
            if on:
                await self._toggle(
                    conversation_id, compaction.id, False, caller.name, caller.user_id
                )
        return [c.to_json(applied=on) for c, on in await self._cards(conversation_id)]

    async def _toggle(
        self, conversation_id: str, compaction_id: str, applied: bool, by: str, user_id: str
    ) -> None:
        row = NewRow(
            kind="card",
            user_id=user_id,
            data={"card": TOGGLE, "id": compaction_id, "applied": applied, "by": by},
        )
        await self._rt.append(conversation_id, [row])

    async def summarize(
        self, conversation_id: str, *, model: str | None = None, user: str | None = None
    ) -> dict[str, Any]:
        """/summarize: the model summarizes the conversation so far; the summary stands in
        for those rows in every later prompt (switchable like any compaction)."""
        conversation = await self._rt.conversation(conversation_id, user=user)
        caller = await self._rt.kernel.caller(user)
        # Imported here: it talks to a model, and the model stack loads only for that.
        from corral.runtime.compaction.summarize import summarize_conversation

        compaction = await summarize_conversation(
            self._rt, self.overlay, conversation, caller, model=model
        )
        row = NewRow(kind="card", user_id=caller.user_id, data=compaction.card())
        await self._rt.append(conversation_id, [row])
        return compaction.to_json()
