"""connect add source: only with sources.mount, under the realpath rules, never showing a path."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import select

from corral.platform import Platform
from corral.store import tables as t


async def stored_roots(platform: Platform) -> dict[str, str]:
    async with platform.kernel.sessions() as session:
        return {row.name: row.root for row in await session.scalars(select(t.Source))}


def real(path: Path) -> str:
    return os.path.realpath(path)


def add(name: str, root: str, **fields: str) -> dict[str, object]:
    return {"add": [{"kind": "source", "name": name, "fields": {"root": root, **fields}}]}


async def test_a_caller_with_the_mount_grant_registers_a_folder_and_can_read_it(
    platform: Platform, tmp_path: Path
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("hello from a source")
    link = tmp_path / "via-link"
    link.symlink_to(folder)
    added = await platform.call_tool("connect", add("notes", str(link)) | {"list": ["source"]})
    assert not added.is_error, added.text
    assert str(tmp_path) not in added.text and str(tmp_path) not in repr(added.data)
    assert added.data is not None
    assert added.data["applied"][0] == {
        "verb": "add",
        "kind": "source",
        "name": "notes",
        "state": "registered",
        "rights": ["read"],
    }
    rows = {row["name"]: row for row in added.data["lists"][0]["rows"]}
    assert rows["notes"]["rights"] == ["read"]
    read = await platform.call_tool("fs_read", {"uri": "notes://a.md"})
    assert "hello from a source" in read.text
    refused = await platform.call_tool(
        "fs_write", {"uri": "notes://b.md", "content": "x"}, profile="auto"
    )
    assert refused.error_code == "policy_denied", refused.text  # only read was asked for
    # The link was followed: the source's root is the real folder.
    assert (await stored_roots(platform))["notes"] == real(folder)


async def test_without_the_mount_grant_or_with_a_bad_root_nothing_is_registered(
    platform: Platform, tmp_path: Path
) -> None:
    await platform.identity.create_user("ana", "member")
    member = await platform.call_tool("connect", add("mine", str(tmp_path)), user="ana")
    assert member.error_code == "feature_missing" and "'sources.mount'" in member.text
    for root, why in [
        ("relative/path", "absolute path"),
        (str(tmp_path / "missing"), "not an existing folder"),
        ("/", "root cannot be a source"),
        (str(platform.kernel.settings.private_dir), "platform's own files"),
        (str(platform.kernel.settings.drive_dir), "already a source"),
    ]:
        refused = await platform.call_tool("connect", add("x", root))
        assert refused.error_code == "invalid_arguments", (root, refused.text)
        assert why in refused.text, (root, refused.text)
        assert root not in refused.text or root in ("/", "relative/path")
    rights = await platform.call_tool("connect", add("x", str(tmp_path), rights="rwx"))
    assert rights.error_code == "invalid_arguments" and "'r' or 'rw'" in rights.text
    names = set(await stored_roots(platform))
    assert "x" not in names and "mine" not in names
