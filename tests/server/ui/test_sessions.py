"""Session cookies, CSRF tokens and one-time sign-in links."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from corral.server.ui import sessions
from corral.server.ui.sessions import BrowserSession, SessionKeys, SignInLinks


def test_a_cookie_names_its_user_and_resists_tampering(tmp_path: Path) -> None:
    keys = SessionKeys.in_private_dir(tmp_path)
    cookie = keys.issue("u_ana")
    assert keys.user_of(cookie) == "u_ana"
    body, _, signature = cookie.rpartition(".")
    forged = body.replace("u_ana", "u_owner") + "." + signature
    assert keys.user_of(forged) is None
    assert keys.user_of(cookie[:-1] + ("0" if cookie[-1] != "0" else "1")) is None
    assert keys.user_of("") is None and keys.user_of(None) is None
    assert keys.user_of("a.b") is None
    other = SessionKeys(os.urandom(32))
    assert other.user_of(cookie) is None


def test_the_key_is_private_and_survives_a_restart(tmp_path: Path) -> None:
    cookie = SessionKeys.in_private_dir(tmp_path).issue("u_ana")
    assert SessionKeys.in_private_dir(tmp_path).user_of(cookie) == "u_ana"
    mode = stat.S_IMODE((tmp_path / "ui-session.key").stat().st_mode)
    assert mode & 0o077 == 0


def test_an_old_cookie_expires(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keys = SessionKeys.in_private_dir(tmp_path)
    cookie = keys.issue("u_ana")
    later = time.time() + sessions.SESSION_SECONDS + 1
    monkeypatch.setattr(sessions.time, "time", lambda: later)
    assert keys.user_of(cookie) is None


def test_csrf_tokens_belong_to_one_session(tmp_path: Path) -> None:
    keys = SessionKeys.in_private_dir(tmp_path)
    first, second = keys.issue("u_ana"), keys.issue("u_ana")
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


def test_a_token_session_names_its_token_and_older_cookies_still_work(tmp_path: Path) -> None:
    keys = SessionKeys.in_private_dir(tmp_path)
    cookie = keys.issue("u_ana", "tok_abc123")
    assert keys.session_of(cookie) == BrowserSession(user_id="u_ana", token_id="tok_abc123")
    assert keys.user_of(cookie) == "u_ana"
    body, _, signature = cookie.rpartition(".")
    assert keys.session_of(body.rsplit(".", 1)[0] + "." + signature) is None  # token cut off
    assert keys.session_of(body.replace("tok_abc123", "tok_other") + "." + signature) is None
    assert keys.session_of(keys.issue("u_ana")) == BrowserSession(user_id="u_ana")
