"""connect's git kind: named remotes written into a drive repository's own config, checked
locally (never claiming the vendor's health), removed again; secrets stay in credentials."""

from __future__ import annotations

from pathlib import Path

from corral.platform import Platform
from tests.sandbox_owner import git, give_to_sandbox

TOKEN = "ghp_stored-token-never-shown-0123456789"


def repository(platform: Platform, tmp_path: Path) -> tuple[Path, str]:
    folder = platform.kernel.settings.drive_dir / "proj"
    folder.mkdir(parents=True)
    git("init", "-q", cwd=folder)
    give_to_sandbox(folder, platform.kernel.settings.sandbox_uid)
    bare = tmp_path / "upstream.git"
    git("init", "-q", "--bare", str(bare), cwd=tmp_path)
    return folder, bare.as_uri()


async def test_add_check_list_and_remove_a_remote(platform: Platform, tmp_path: Path) -> None:
    folder, upstream = repository(platform, tmp_path)
    owner = await platform.caller()
    await platform.credentials.set("forge", TOKEN, user_id=owner.user_id)
    item = {
        "kind": "git",
        "name": "upstream",
        "url": upstream,
        "fields": {"repo": "data://proj", "credential": "forge"},
    }
    added = await platform.call_tool(
        "connect",
        {"add": [item], "check": [{"kind": "git", "name": "upstream"}], "list": ["git"]},
    )
    assert not added.is_error, added.text
    assert git("remote", "get-url", "upstream", cwd=folder) == upstream
    assert added.data is not None
    checked = added.data["applied"][1]
    assert checked["state"] == "configured" and checked["url"] == upstream
    assert checked["credential"] == "forge" and checked["credentialHasValue"] is True
    assert checked["lastFetch"] is None and "not contacted" in checked["note"]
    assert [row["name"] for row in added.data["lists"][0]["rows"]] == ["upstream"]
    shown = added.text + repr(added.data)
    assert TOKEN not in shown and str(folder) not in shown

    git("fetch", "-q", "upstream", cwd=folder)  # what a person (or execute) would run
    again = await platform.call_tool("connect", {"check": [{"kind": "git", "name": "upstream"}]})
    assert again.data is not None and again.data["applied"][0]["lastFetch"] is not None

    removed = await platform.call_tool("connect", {"remove": [{"kind": "git", "name": "upstream"}]})
    assert not removed.is_error, removed.text
    assert "upstream" not in git("remote", cwd=folder).split()
    gone = await platform.call_tool("connect", {"check": [{"kind": "git", "name": "upstream"}]})
    assert gone.error_code == "partially_applied" and "not_found" in gone.text


async def test_bad_git_remotes_are_refused_before_anything_is_written(
    platform: Platform, tmp_path: Path
) -> None:
    folder, upstream = repository(platform, tmp_path)
    (platform.kernel.settings.drive_dir / "plain").mkdir()
    for url, repo, why in [
        ("https://user:pw@forge.example/r.git", "data://proj", "must not carry a user"),
        ("ext::sh -c touch% /tmp/x", "data://proj", "URL with a host"),
        (upstream, "data://plain", "not a git repository"),
        (upstream, str(tmp_path), "folder of the project drive"),
        (upstream, "data://../../etc", "project drive"),
    ]:
        item = {"kind": "git", "name": "up", "url": url, "fields": {"repo": repo}}
        refused = await platform.call_tool("connect", {"add": [item]})
        assert refused.is_error, (url, repo)
        assert why in refused.text, (url, repo, refused.text)
    assert git("remote", cwd=folder) == ""
    await platform.identity.create_user("ana", "member")
    item = {"kind": "git", "name": "up", "url": upstream, "fields": {"repo": "data://proj"}}
    member = await platform.call_tool("connect", {"add": [item]}, user="ana")
    assert member.error_code == "feature_missing" and "'git.connect'" in member.text
