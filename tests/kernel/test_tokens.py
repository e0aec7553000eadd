"""API tokens: found in memory, revoked at once in every process, stamped once a minute."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import httpx
from sqlalchemy import event, select

from corral.kernel.tokens import TokenLookup
from corral.platform import Platform
from corral.server.app import create_app
from corral.store import tables as t


def cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CORRAL_DATA_DIR": str(data_dir)}
    return subprocess.run(
        [sys.executable, "-m", "corral", *args], capture_output=True, text=True, env=env
    )


async def test_a_token_revoked_by_another_process_is_refused_at_once(
    platform: Platform, data_dir: Path
) -> None:
    made = cli(data_dir, "tokens", "create", "owner")
    assert made.returncode == 0, made.stderr
    token = made.stdout.split()[-1]
    token_id = made.stdout.split()[1]
    transport = httpx.ASGITransport(app=create_app(platform))
    async with httpx.AsyncClient(transport=transport, base_url="http://corral.test") as http:
        auth = {"Authorization": f"Bearer {token}"}
        # Made by another process a moment ago, it works here without a restart.
        assert (await http.get("/tools", headers=auth)).status_code == 200
        revoked = await asyncio.to_thread(cli, data_dir, "tokens", "revoke", token_id)
        assert revoked.returncode == 0, revoked.stderr
        refused = await http.get("/tools", headers=auth)
        assert refused.status_code == 401 and "revoked" in refused.text


async def test_last_used_is_stamped_at_most_once_a_minute_off_the_request(
    platform: Platform,
) -> None:
    now = [1000.0]
    lookup = TokenLookup(platform.sessions, clock=lambda: now[0])
    made = await platform.identity.create_token("owner")

    async def stamped() -> object:
        await lookup.settle()
        async with platform.sessions() as session:
            return await session.scalar(
                select(t.ApiToken.last_used_at).where(t.ApiToken.id == made.id)
            )

    assert await lookup.user_for(made.token) == "u_owner"
    first = await stamped()
    assert first is not None
    now[0] += 59
    assert await lookup.user_for(made.token) == "u_owner"
    assert await stamped() == first  # within the minute: no write
    now[0] += 2
    assert await lookup.user_for(made.token) == "u_owner"
    later = await stamped()
    assert later is not None and later != first
    assert await lookup.user_for("corral_not-a-token") is None


async def test_a_lookup_reads_the_version_without_sqlalchemy_until_it_moves(
    platform: Platform,
) -> None:
    made = await platform.identity.create_token("owner")
    statements: list[str] = []

    def seen(*args: object) -> None:
        statements.append(str(args[2]))

    owner = await platform.identity.user_for_token(made.token)  # loads the active tokens
    event.listen(platform.engine.sync_engine, "before_cursor_execute", seen)
    try:
        for _ in range(5):
            assert await platform.identity.user_for_token(made.token) == owner
        assert statements == []  # the version came from the store's own quick read
        other = await platform.identity.create_token("owner")  # moves the version
        statements.clear()
        assert await platform.identity.user_for_token(other.token) == owner
        assert any("api_tokens" in s for s in statements)  # read again, once
    finally:
        event.remove(platform.engine.sync_engine, "before_cursor_execute", seen)


async def test_a_token_is_known_by_its_id_until_it_is_revoked(platform: Platform) -> None:
    lookup = TokenLookup(platform.sessions)  # its own cache, as in another process
    made = await platform.identity.create_token("owner")
    found = await lookup.lookup(made.token)
    assert found is not None and (found.token_id, found.user_id) == (made.id, "u_owner")
    assert await lookup.is_active(made.id)
    assert not await lookup.is_active("tok_000000000000")
    await platform.identity.revoke_token(made.id)
    assert not await lookup.is_active(made.id)
    assert await lookup.lookup(made.token) is None
