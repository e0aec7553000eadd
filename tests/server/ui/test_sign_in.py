"""Signing in with an API token over real HTTP: the session lives as long as its token, and
a run's ticket cannot begin one."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

from tests.server.ui.conftest import LiveServer, script


def _sign_in(client: httpx.Client, token: str) -> httpx.Response:
    form = client.get("/ui/sign-in").text
    found = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert found is not None, form
    return client.post("/ui/sign-in", data={"token": token, "csrf_token": found.group(1)})


def test_a_token_session_ends_when_its_token_is_revoked(server: LiveServer) -> None:
    identity = server.platform.identity
    server.run(identity.create_user("ivy", "member"))
    made = server.run(identity.create_token("ivy"))
    other = server.run(identity.create_token("ivy"))
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        assert _sign_in(client, made.token).status_code == 303
        assert client.get("/ui").status_code == 200
        server.run(identity.revoke_token(other.id))  # another token: this session goes on
        assert client.get("/ui").status_code == 200
        server.run(identity.revoke_token(made.id))
        page = client.get("/ui")
        assert page.status_code == 303 and page.headers["location"] == "/ui/sign-in"
        fragment = client.get("/ui", headers={"HX-Request": "true"})
        assert fragment.status_code == 401 and "sign in again" in fragment.text
        refused = _sign_in(client, made.token)
        assert refused.status_code == 401 and "Unknown or revoked token" in refused.text


def test_a_link_session_does_not_depend_on_any_token(server: LiveServer) -> None:
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        assert client.get(server.link()).status_code == 303
        assert client.get("/ui").status_code == 200


def test_a_runs_ticket_cannot_begin_a_browser_session(server: LiveServer, tmp_path: Path) -> None:
    platform = server.platform
    turn = server.run(platform.runtime.chat("hi", model=script(tmp_path, {"text": "Hello."})))
    ticket = server.run(
        platform.identity.tickets.for_run(
            run_id=turn.run_id, user_id="u_owner", conversation_id=turn.conversation_id
        )
    )
    assert server.run(platform.identity.user_for_token(ticket)) == "u_owner"  # a live ticket
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        refused = _sign_in(client, ticket)
        assert refused.status_code == 401 and "Unknown or revoked token" in refused.text
