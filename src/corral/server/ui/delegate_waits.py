"""A delegate card that waits on its child run shows the child's own pending cards.

While a foreground subagent is parked on an approval or a question, its parent's call waits
with kind ``delegate`` (the child run's id). The parent's chat shows, in place of that
waiting card, the child's pending cards with their Approve / Deny or answer form, read
from the child run's own rows; a child that waits on a grandchild is followed down. The
conversations read on the way are noted on the card so the chat's stream can follow them
and redraw the card when the child moves.
"""

from __future__ import annotations

from corral.errors import NotFound
from corral.server.ui.access import SignedIn
from corral.server.ui.timeline import CallCard, TimelineView

__all__ = ["open_child_cards", "show_child_waits"]

_MAX_DEPTH = 8
"""Delegation nests a few levels at most; deeper chains are not followed."""


async def show_child_waits(who: SignedIn, card: CallCard, *, depth: int = 0) -> None:
    """Fill ``card.inner`` (and ``card.followed``) when it waits on a delegate run."""
    card.inner, card.child_run, card.followed = [], None, []
    if card.wait_kind != "delegate" or depth >= _MAX_DEPTH:
        return
    rt = who.platform.runtime
    try:
        child = await rt.run(card.wait_id, user=who.user)
    except NotFound:
        return  # not this person's run: the card stays as it was
    card.child_run = {"run_id": child.id, "status": child.status}
    card.followed.append(child.conversation_id)
    if child.status != "parked":
        return
    rows = await rt.rows(child.conversation_id, user=who.user)
    view = TimelineView.of(row for row in rows if row.run_id == child.id)
    for wait in child.waiting:
        inner = view.calls.get(wait.call_id)
        if inner is None or inner.state != "waiting":
            continue
        await show_child_waits(who, inner, depth=depth + 1)
        card.followed.extend(inner.followed)
        card.inner.append(inner)


async def open_child_cards(who: SignedIn, view: TimelineView) -> None:
    """:func:`show_child_waits` for every card of ``view`` that waits on a delegate."""
    for card in view.calls.values():
        if card.wait_kind == "delegate":
            await show_child_waits(who, card)
