"""The credential store: encrypted at rest, a 0600 key file, per user and per project,
rotation that never loses a value, and clear errors for every bad input."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from corral.connect import CredentialKey, CredentialStore
from corral.errors import ConfigError, NotFound, UsageError
from corral.platform import Platform

VALUE = "tvly-stored-0123456789abcdef"


def db_bytes(data_dir: Path) -> bytes:
    """Everything SQLite has on disk for the project, WAL included."""
    return b"".join(p.read_bytes() for p in data_dir.glob("corral.db*") if p.is_file())


async def test_values_are_encrypted_at_rest_and_the_key_is_private(
    platform: Platform, data_dir: Path
) -> None:
    owner = await platform.caller()
    entry = await platform.credentials.set("tavily", VALUE + "\n", user_id=owner.user_id)
    assert (entry.name, entry.scope, entry.has_value) == ("tavily", "user", True)
    assert await platform.credentials.lookup("tavily", user_id=owner.user_id) == VALUE
    assert VALUE.encode() not in db_bytes(data_dir)
    key_file = data_dir / "private" / "credentials.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert VALUE.encode() not in key_file.read_bytes()


async def test_a_key_file_others_may_read_is_refused(platform: Platform, data_dir: Path) -> None:
    owner = await platform.caller()
    await platform.credentials.set("brave", VALUE, user_id=owner.user_id)
    key_file = data_dir / "private" / "credentials.key"
    os.chmod(key_file, 0o644)
    with pytest.raises(ConfigError, match=r"readable by others.*chmod 600"):
        await platform.credentials.lookup("brave", user_id=owner.user_id)


async def test_a_value_stored_with_another_key_is_explained(
    platform: Platform, data_dir: Path, tmp_path: Path
) -> None:
    owner = await platform.caller()
    other = CredentialStore(platform.sessions, CredentialKey(tmp_path / "other.key"))
    await other.set("brave", VALUE, user_id=owner.user_id)
    with pytest.raises(ConfigError, match="'brave' cannot be decrypted"):
        await platform.credentials.lookup("brave", user_id=owner.user_id)


async def test_rotation_re_encrypts_every_value_and_retires_the_old_key(
    platform: Platform, data_dir: Path
) -> None:
    owner = await platform.caller()
    store = platform.credentials
    await store.set("tavily", VALUE, user_id=owner.user_id)
    await store.set("brave", "BSA-project-0123456789", user_id=owner.user_id, scope="project")
    key_file = data_dir / "private" / "credentials.key"
    old_key = key_file.read_text().strip()
    assert await store.rotate() == 2
    new_key = key_file.read_text().strip()
    assert new_key != old_key and "\n" not in new_key
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert await store.lookup("tavily", user_id=owner.user_id) == VALUE
    assert await store.lookup("brave", user_id=owner.user_id) == "BSA-project-0123456789"
    # The retired key no longer opens what is stored.
    old_only = data_dir / "old.key"
    old_only.write_text(old_key + "\n")
    os.chmod(old_only, 0o600)
    stale = CredentialStore(platform.sessions, CredentialKey(old_only))
    with pytest.raises(ConfigError, match="cannot be decrypted"):
        await stale.lookup("tavily", user_id=owner.user_id)


async def test_a_users_own_value_wins_over_the_projects_and_others_see_only_theirs(
    platform: Platform,
) -> None:
    owner = await platform.caller()
    ana = await platform.identity.create_user("ana", "member")
    store = platform.credentials
    await store.set("tavily", "tvly-project-000000000000", user_id=owner.user_id, scope="project")
    await store.set("tavily", "tvly-owner-0000000000000", user_id=owner.user_id)
    assert await store.lookup("tavily", user_id=owner.user_id) == "tvly-owner-0000000000000"
    assert await store.lookup("tavily", user_id=ana) == "tvly-project-000000000000"
    await store.set("brave", "BSA-ana-000000000000", user_id=ana)
    assert await store.lookup("brave", user_id=owner.user_id) is None
    listed = [(e.name, e.scope) for e in await store.entries(user_id=ana)]
    assert listed == [("brave", "user"), ("tavily", "project")]


async def test_bad_names_values_and_removals_are_explained(platform: Platform) -> None:
    owner = await platform.caller()
    store = platform.credentials
    with pytest.raises(UsageError, match="credential name 'Tavily Key' is not allowed"):
        await store.set("Tavily Key", VALUE, user_id=owner.user_id)
    with pytest.raises(UsageError, match="value is empty"):
        await store.set("tavily", "  \n", user_id=owner.user_id)
    with pytest.raises(UsageError, match="at most 16384"):
        await store.set("tavily", "x" * 20_000, user_id=owner.user_id)
    with pytest.raises(NotFound, match="no user credential named 'ghost'"):
        await store.remove("ghost", user_id=owner.user_id)
    await store.set("tavily", VALUE, user_id=owner.user_id)
    with pytest.raises(NotFound, match="no project credential named 'tavily'"):
        await store.remove("tavily", user_id=owner.user_id, scope="project")
    await store.remove("tavily", user_id=owner.user_id)
    assert await store.lookup("tavily", user_id=owner.user_id) is None
