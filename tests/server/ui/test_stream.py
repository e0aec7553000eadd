"""The chat page's live stream over real HTTP: a reconnect with ``Last-Event-ID`` gets
exactly the rows it missed, as HTML fragments; another user's stream is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx

from corral.server.ui.access import UiState
from corral.server.ui.sessions import COOKIE_NAME
from tests.server.ui.conftest import LiveServer, script


def _client(server: LiveServer, user: str | None = None) -> httpx.Client:
    state: UiState = server.app.state.ui
    user_id = server.run(server.platform.caller(user)).user_id
    return httpx.Client(
        base_url=server.base_url,
        cookies={COOKIE_NAME: server.run(state.sessions.begin(user_id))},
        timeout=30,
    )


def _row_events(lines: Iterator[str], count: int) -> list[tuple[str, str]]:
    """(id, data) of the first ``count`` row events of an SSE stream."""
    found: list[tuple[str, str]] = []
    event = ident = ""
    data: list[str] = []
    for line in lines:
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("id: "):
            ident = line[4:]
        elif line.startswith("data: "):
            data.append(line[6:])
        elif line == "":
            if event == "row":
                found.append((ident, "\n".join(data)))
                if len(found) == count:
                    return found
            event, ident, data = "", "", []
    return found


def test_a_reconnect_gets_exactly_the_rows_it_missed(server: LiveServer, tmp_path: Path) -> None:
    model = script(tmp_path, {"text": "First <answer>."}, {"text": "Second answer."})
    rt = server.platform.runtime
    first = server.run(rt.chat("one", model=model))
    server.run(rt.chat("two", conversation_id=first.conversation_id))
    rows = server.run(rt.rows(first.conversation_id))
    cut = next(r.seq for r in rows if r.data.get("text") == "two")
    url = f"/ui/c/{first.conversation_id}/stream"
    with _client(server) as client:
        headers = {"Last-Event-ID": str(cut - 1)}
        with client.stream("GET", url, params={"after": 0}, headers=headers) as stream:
            assert stream.status_code == 200
            got = _row_events(stream.iter_lines(), len(rows) - cut + 1)
        assert [int(i) for i, _ in got] == [r.seq for r in rows if r.seq >= cut]
        assert "two" in got[0][1] and "Second answer." in got[1][1]
        with client.stream("GET", url, params={"after": 1}) as stream:
            replay = _row_events(stream.iter_lines(), 1)
        assert replay[0][0] == "2" and "First &lt;answer&gt;." in replay[0][1]

    server.run(server.platform.identity.create_user("leo", "member"))
    with _client(server, "leo") as other:
        assert other.get(url).status_code == 404
        assert other.get(f"/ui/c/{first.conversation_id}").status_code == 404
