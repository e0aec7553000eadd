"""What bad input cannot do to the server: huge bodies, huge arguments, members reading
settings, a database others can read."""

from __future__ import annotations

import stat
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

import corral
from corral.platform import Platform
from tests.server.test_conversations_api import api_platform, http

__all__ = ["api_platform", "http"]  # the fixtures these tests use

MB = 1_000_000


async def test_a_two_megabyte_body_is_413_declared_or_streamed(
    http: httpx.AsyncClient, api_platform: Platform
) -> None:
    title = "x" * (2 * MB)
    declared = await http.post("/conversations", json={"title": title})
    assert declared.status_code == 413, declared.text
    assert declared.json()["code"] == "body_too_large"

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"title": "'
        for _ in range(40):
            yield b"y" * 50_000
        yield b'"}'

    streamed = await http.post(
        "/conversations", content=chunks(), headers={"content-type": "application/json"}
    )
    assert streamed.status_code == 413
    assert await api_platform.runtime.list_conversations() == []
    await api_platform.admin.set_live("http_body_max_bytes", 3 * MB)
    assert (await http.post("/conversations", json={"title": title})).status_code == 201


async def test_a_five_megabyte_argument_gets_a_bounded_error(
    http: httpx.AsyncClient, api_platform: Platform
) -> None:
    await api_platform.admin.set_live("http_body_max_bytes", 8 * MB)
    huge = "z" * (5 * MB)
    answer = await http.post(
        "/tools/execute/call", json={"arguments": {"command": "ls", "timeout": huge}}
    )
    assert answer.status_code == 200
    assert len(answer.content) < 5_000
    text = answer.text
    assert "invalid_arguments" in text and "more characters" in text


async def test_members_may_not_read_live_settings(
    http: httpx.AsyncClient, api_platform: Platform
) -> None:
    await api_platform.identity.create_user("max", "member")
    token = await api_platform.identity.create_token("max")
    member = await http.get("/settings/live", headers={"Authorization": f"Bearer {token.token}"})
    assert member.status_code == 403 and "admin.settings" in member.json()["detail"]
    assert (await http.get("/settings/live")).status_code == 200


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_the_database_its_wal_and_shm_are_private(data_dir: Path) -> None:
    async with corral.open(data_dir) as platform:
        await platform.identity.create_user("ana", "member")  # a write: WAL and SHM exist
        files = [data_dir / n for n in ("corral.db", "corral.db-wal", "corral.db-shm")]
        assert all(f.exists() for f in files)
        assert [mode(f) for f in files] == [0o600, 0o600, 0o600]
        assert mode(platform.settings.private_dir) == 0o700
    (data_dir / "corral.db").chmod(0o644)  # an older install
    async with corral.open(data_dir):
        assert mode(data_dir / "corral.db") == 0o600
