"""The browser's grace period over real HTTP: a report that would continue a conversation its
starter has open is offered to that page's stream; the page's claim starts the turn as the
browser's, an unclaimed offer is run by the server after the grace, and with the page closed
(or the grace set to 0, a live change) the server runs it at once."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from corral.runtime.runs import RunRecord
from corral.server.ui.access import UiState
from corral.server.ui.sessions import COOKIE_NAME, CSRF_HEADER
from tests.server.ui.conftest import LiveServer, script

GRACE = "background_wake_client_grace_ms"


@contextmanager
def _signed_in(server: LiveServer, user: str | None = None) -> Iterator[httpx.Client]:
    state: UiState = server.app.state.ui
    user_id = server.run(server.platform.caller(user)).user_id
    cookie = server.run(state.sessions.begin(user_id))
    headers = {CSRF_HEADER: state.keys.csrf_token(cookie)}
    with httpx.Client(
        base_url=server.base_url, cookies={COOKIE_NAME: cookie}, headers=headers, timeout=30
    ) as client:
        yield client


def _events(lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    """(event, data) of each message of an SSE stream; fails once it has run 30 s (the
    server's keep-alive pings every 15 s end a wait for an event that never comes)."""
    event, data = "", []
    deadline = time.monotonic() + 30
    for line in lines:
        assert time.monotonic() < deadline, "the stream did not send what the test waits for"
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            data.append(line[6:])
        elif line == "" and event:
            yield event, "\n".join(data)
            event, data = "", []


def _conversation(server: LiveServer, tmp_path: Path) -> str:
    model = script(tmp_path, {"text": "Ready."}, {"text": "Continued after the report."})
    return server.run(server.platform.runtime.chat("start", model=model)).conversation_id


def _report(server: LiveServer, cid: str) -> None:
    owner = server.run(server.platform.caller(None))
    server.run(
        server.platform.runtime.reports.queue_report(
            conversation_id=cid,
            user_id=owner.user_id,
            source="shell",
            source_id="sh_test",
            title="Background shell sh_test exited",
            text="exit code 0",
            data={},
        )
    )


def _latest(server: LiveServer, cid: str) -> RunRecord:
    rt = server.platform.runtime
    server.run(rt.wait_idle(cid))
    return server.run(rt.runs.list_runs(conversation_id=cid, limit=1))[0]


def _newest(server: LiveServer, cid: str) -> str:
    """The id of the conversation's newest run, as it stands (no waiting)."""
    return server.run(server.platform.runtime.runs.list_runs(conversation_id=cid, limit=1))[0].id


def _open_page(stream: Iterator[tuple[str, str]], rows: int) -> None:
    """Read the backlog: from then on the stream's page counts as open."""
    for _ in range(rows):
        assert next(event for event, _ in stream if event == "row")


def test_the_open_page_claims_the_continuation(server: LiveServer, tmp_path: Path) -> None:
    server.run(server.platform.admin.set_live(GRACE, 60_000))
    cid = _conversation(server, tmp_path)
    rows = len(server.run(server.platform.runtime.rows(cid)))
    with _signed_in(server) as client:
        with client.stream("GET", f"/ui/c/{cid}/stream") as response:
            stream = _events(response.iter_lines())
            _open_page(stream, rows)
            before = _newest(server, cid)
            _report(server, cid)
            assert _newest(server, cid) == before  # offered, not started: it waits for the page
            claim = next(data for event, data in stream if event == "claim")
            assert f'hx-post="/ui/c/{cid}/claim"' in claim and 'hx-trigger="load"' in claim
            found = re.search(r"wo_[0-9a-f]+", claim)
            assert found is not None, claim
            offer = found.group()

            server.run(server.platform.identity.create_user("pia", "member"))
            with _signed_in(server, "pia") as other:
                assert other.post(f"/ui/c/{cid}/claim", data={"offer": offer}).status_code == 404
            assert client.post(f"/ui/c/{cid}/claim", data={"offer": "wo_wrong"}).status_code == 204
            assert client.post(f"/ui/c/{cid}/claim", data={"offer": offer}).status_code == 204
            run = _latest(server, cid)
            assert (run.trigger, run.status) == ("browser", "finished")
            # Spent: a second claim (another tab) starts nothing.
            assert client.post(f"/ui/c/{cid}/claim", data={"offer": offer}).status_code == 204
            assert _latest(server, cid).id == run.id
    answers = [
        r.data["text"]
        for r in server.run(server.platform.runtime.rows(cid))
        if r.kind == "model_turn"
    ]
    assert answers[-1] == "Continued after the report."


def test_an_unclaimed_offer_is_run_by_the_server_after_the_grace(
    server: LiveServer, tmp_path: Path
) -> None:
    server.run(server.platform.admin.set_live(GRACE, 300))
    cid = _conversation(server, tmp_path)
    rows = len(server.run(server.platform.runtime.rows(cid)))
    with _signed_in(server) as client:
        with client.stream("GET", f"/ui/c/{cid}/stream") as response:
            stream = _events(response.iter_lines())
            _open_page(stream, rows)
            began = time.monotonic()
            _report(server, cid)
            assert next(event for event, _ in stream if event == "claim")
            run = _latest(server, cid)  # the page never claims
            assert time.monotonic() - began >= 0.3
    assert (run.trigger, run.status) == ("report", "finished")


def test_with_the_page_closed_or_no_grace_the_server_runs_it_at_once(
    server: LiveServer, tmp_path: Path
) -> None:
    rt = server.platform.runtime
    server.run(server.platform.admin.set_live(GRACE, 60_000))
    closed = _conversation(server, tmp_path)
    before = _newest(server, closed)
    _report(server, closed)  # nobody has it open: started before queue_report returns
    assert _newest(server, closed) != before
    assert _latest(server, closed).trigger == "report"

    # Open, but the grace is switched off live: no offer, the server runs it at once.
    server.run(server.platform.admin.set_live(GRACE, 0))
    cid = _conversation(server, tmp_path)
    rows = len(server.run(rt.rows(cid)))
    with _signed_in(server) as client:
        with client.stream("GET", f"/ui/c/{cid}/stream") as response:
            stream = _events(response.iter_lines())
            _open_page(stream, rows)
            before = _newest(server, cid)
            _report(server, cid)
            assert _newest(server, cid) != before
            seen = []
            for event, data in stream:
                seen.append(event)
                if event == "row" and "Continued after the report." in data:
                    break
            assert "claim" not in seen
    assert _latest(server, cid).trigger == "report"
    server.run(server.platform.admin.set_live(GRACE, 3_000))
