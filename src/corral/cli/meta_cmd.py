"""`corral conversations meta`: a conversation's meta document as JSON."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from corral.cli._run import print_json, run_with_platform
from corral.platform import Platform

__all__ = ["meta"]


def meta(conversation_id: Annotated[str, typer.Argument(help="The conversation's id.")]) -> None:
    """Goal, todo list, loop bound, the session ledger (sessionLedger), compactions and
    questions of a conversation, as JSON."""

    async def work(platform: Platform) -> dict[str, Any]:
        return await platform.conversation_meta(conversation_id)

    print_json(run_with_platform(work))
