"""Server-side sessions, CSRF tokens and one-time sign-in links."""

from __future__ import annotations

import stat
import time
from pathlib import Path

import pytest

from corral.errors import NotFound
from corral.kernel.ui_sessions import UiSessions
from corral.platform import Platform
from corral.server.ui import sessions
from corral.server.ui.sessions import SessionKeys, SignInLinks


async def test_a_session_is_a_record_that_ending_and_revoking_close(platform: Platform) -> None:
    store = UiSessions(platform.kernel.sessions)
    owner = (await platform.caller()).user_id
    cookie = await store.begin(owner)
    found = await store.find(cookie)
    assert found is not None and found.user_id == owner and found.token_id is None
    session_id, _, secret = cookie.partition(".")
    assert await store.find(f"{session_id}.{secret[:-1]}x") is None  # a guessed secret
    assert await store.find(secret) is None and await store.find(None) is None
    await store.end(cookie)
    assert await store.find(cookie) is None

    by_token = await store.begin(owner, token_id="tok_abc")
    listed = await store.list()
    assert [(s.id, s.token_id) for s in listed] == [(by_token.partition(".")[0], "tok_abc")]
    await store.revoke(listed[0].id)
    assert await store.find(by_token) is None and await store.list() == []
    with pytest.raises(NotFound, match="corral sessions list"):
        await store.revoke(listed[0].id)


async def test_an_old_session_expires(platform: Platform) -> None:
    store = UiSessions(platform.kernel.sessions)
    owner = (await platform.caller()).user_id
    assert await store.find(await store.begin(owner, seconds=-1)) is None


def test_the_key_is_private_and_survives_a_restart(tmp_path: Path) -> None:
    token = SessionKeys.in_private_dir(tmp_path).csrf_token("s_1.secret")
    assert SessionKeys.in_private_dir(tmp_path).csrf_ok("s_1.secret", token)
    mode = stat.S_IMODE((tmp_path / "ui-session.key").stat().st_mode)
    assert mode & 0o077 == 0


def test_csrf_tokens_belong_to_one_session(tmp_path: Path) -> None:
    keys = SessionKeys.in_private_dir(tmp_path)
    first, second = "s_1.one", "s_2.two"
    token = keys.csrf_token(first)
    assert keys.csrf_ok(first, token)
    assert not keys.csrf_ok(second, token)
    assert not keys.csrf_ok(first, None) and not keys.csrf_ok(None, token)
    assert not keys.csrf_ok(first, token.upper() if token != token.upper() else "x")


def test_a_sign_in_link_works_once(monkeypatch: pytest.MonkeyPatch) -> None:
    links = SignInLinks(ttl_seconds=60)
    code = links.create("u_owner")
    assert links.spend(code) == "u_owner"
    assert links.spend(code) is None
    assert links.spend("guessed") is None
    stale = links.create("u_owner")
    later = time.monotonic() + 61
    monkeypatch.setattr(sessions.time, "monotonic", lambda: later)
    assert links.spend(stale) is None
