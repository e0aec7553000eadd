"""A provider key stored in the credential store reaches the provider and nothing else.

The Tavily server here is hostile: it echoes the Authorization header it received into its
answer. The stored value must reach the server, and must then be absent from the tool
result, every timeline row, every log line, every ``perf.slow`` record and the database.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from sqlalchemy import select

from corral.connect import CredentialKey, CredentialStore
from corral.store import tables as t
from tests.runtime.conftest import ScriptWriter, call
from tests.web.conftest import Handler
from tests.web.search.conftest import OpenSearch, Sites, tavily_answer

STORED = "tvly-stored-9f8e7d6c5b4a3210"


def db_bytes(data_dir: Path) -> bytes:
    """Everything SQLite has on disk for the project, WAL included."""
    return b"".join(p.read_bytes() for p in data_dir.glob("corral.db*") if p.is_file())


def echo_authorization(handler: Handler) -> None:
    echoed = handler.headers.get("Authorization", "")
    body = tavily_answer(
        {"title": "Echo", "url": "https://echo.example/", "content": f"you sent {echoed}"}
    )
    handler.reply(200, json.dumps(body).encode(), content_type="application/json")


@pytest.fixture
def write_script(tmp_path: Path) -> ScriptWriter:
    def write(*turns: object) -> str:
        path = tmp_path / "script.json"
        path.write_text(json.dumps({"turns": list(turns)}))
        return f"script:{path}"

    return write


async def test_a_stored_key_is_used_and_never_shown(
    open_search: OpenSearch,
    sites: Sites,
    data_dir: Path,
    write_script: ScriptWriter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    sites.tavily.routes["/search"] = echo_authorization
    platform = await open_search(tavily=False, brave=False, searxng=False, perf_slow_tool_ms=1)
    owner = await platform.caller()
    # Stored as another process would (the CLI): this platform has never seen the value.
    elsewhere = CredentialStore(
        platform.sessions, CredentialKey.in_private_dir(data_dir / "private")
    )
    await elsewhere.set("tavily", STORED, user_id=owner.user_id)

    direct = await platform.call_tool("web_search", {"query": "q", "strategy": "tavily"})
    assert not direct.is_error, direct.text
    assert [s.headers["authorization"] for s in sites.tavily.requests] == [f"Bearer {STORED}"]
    assert "you sent Bearer [redacted]" in direct.text

    model = write_script(
        {"tool_calls": [call("web_search", query="corral", strategy="tavily")]},
        {"text": "Searched."},
    )
    turn = await platform.chat("search", model=model)
    assert turn.status == "finished", turn.detail
    rows = await platform.rows(turn.conversation_id)
    [result_row] = [r for r in rows if r.kind == "tool_result"]
    assert "you sent Bearer [redacted]" in json.dumps(result_row.data)

    async with platform.sessions() as session:
        records = list(await session.scalars(select(t.LogRecord)))
    assert any(r.kind == "perf.slow" for r in records)  # the scan below is not vacuous
    seen = [
        direct.text,
        json.dumps(direct.data),
        *(json.dumps(r.data, default=str) for r in rows),
        *(json.dumps(r.data, default=str) for r in records),
        *(r.getMessage() for r in caplog.records),
    ]
    assert [s for s in seen if STORED in s] == []
    await platform.close()
    assert STORED.encode() not in db_bytes(data_dir)


async def test_settings_stay_the_fallback_and_a_stored_key_wins(
    open_search: OpenSearch, sites: Sites
) -> None:
    platform = await open_search(brave=False, searxng=False)
    assert not (
        await platform.call_tool("web_search", {"query": "q", "strategy": "tavily"})
    ).is_error
    owner = await platform.caller()
    await platform.credentials.set("tavily", STORED, user_id=owner.user_id)
    assert not (
        await platform.call_tool("web_search", {"query": "q", "strategy": "tavily"})
    ).is_error
    sent = [s.headers["authorization"] for s in sites.tavily.requests]
    assert sent == ["Bearer tvly-test-0123456789abcdef", f"Bearer {STORED}"]
