"""Session tickets: issued per run, resolved while live, dead when the run ends or expires."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import corral
from corral.kernel.tickets import Tickets
from corral.platform import Platform


@pytest.fixture
async def opened(data_dir: Path) -> AsyncIterator[Platform]:
    async with corral.open(data_dir) as platform:
        yield platform


async def test_a_ticket_lives_with_its_run_and_its_lifetime(opened: Platform) -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    tickets = Tickets(opened.sessions, lifetime=timedelta(hours=1), clock=lambda: now[0])
    token = await tickets.for_run(run_id="r_1", user_id="u_owner", conversation_id="c_1")
    assert token.startswith("ctk_")
    assert await tickets.for_run(run_id="r_1", user_id="u_owner", conversation_id="c_1") == token
    found = await tickets.resolve(token)
    assert found is not None and (found.user_id, found.conversation_id) == ("u_owner", "c_1")
    assert await tickets.resolve("ctk_forged") is None
    assert await tickets.resolve(token.replace("ctk_", "tok_")) is None
    now[0] += timedelta(minutes=50)  # near its end: the next command gets a fresh one
    fresh = await tickets.for_run(run_id="r_1", user_id="u_owner", conversation_id="c_1")
    assert fresh != token and await tickets.resolve(token) is not None
    now[0] += timedelta(minutes=11)
    assert await tickets.resolve(token) is None and await tickets.resolve(fresh) is not None
    assert await opened.identity.user_for_token(fresh) is None  # the platform's clock: expired
    await tickets.end_run("r_1")
    assert await tickets.resolve(fresh) is None and await tickets.live_for("r_1") == 0
