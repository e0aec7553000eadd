"""``platform.rewind_preview`` says, path by path, what a rewind of files would put back (a
diff for text files, binary files named as such, modes and links) without touching
anything; ``platform.rewind`` is refused on conflicts unless forced."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.errors import PolicyDenied, UsageError
from corral.platform import Platform
from tests.shell.conftest import needs_bwrap
from tests.shell.test_checkpoints import describe
from tests.shell.test_rewind import fill, step

pytestmark = needs_bwrap


async def test_the_preview_lists_each_path_and_changes_nothing(
    platform: Platform, drive: Path
) -> None:
    await platform.admin.set_live("checkpoints", True)
    start = fill(drive, platform.kernel.settings.sandbox_uid)
    conversation = (await platform.runtime.start_conversation()).id
    command = (
        "sed -i s/one/two/ a.txt && rm b.txt && printf 'a\\000b' > bin.dat && "
        "chmod 700 sub && ln -s a.txt l"
    )
    await step(platform, conversation, "execute", command=command, cwd=str(drive / "proj"))
    after = describe(drive / "proj")
    assert [s.step for s in await platform.checkpoints(conversation)] == [1]

    preview = await platform.rewind_preview(conversation, "1", conversation=False)
    assert describe(drive / "proj") == after
    assert preview.conversation is None and not preview.conflicts and preview.blocked is None
    assert [s.step for s in preview.steps] == [1]
    assert preview.files is not None
    assert {c.root for c in preview.files} == {str(drive)}
    changes = {c.path.removeprefix("proj/"): c for c in preview.files}
    assert set(changes) == {"a.txt", "b.txt", "bin.dat", "sub", "l"}
    a = changes["a.txt"]
    assert (a.action, a.content, a.binary) == ("modify", True, False)
    assert a.diff is not None and "-two\n" in a.diff and "+one\n" in a.diff
    b = changes["b.txt"]
    assert (b.action, b.kind_now, b.kind_then) == ("recreate", None, "file")
    assert b.diff is not None and "+bee\n" in b.diff
    binary = changes["bin.dat"]
    assert (binary.action, binary.binary, binary.diff) == ("remove", True, None)
    sub = changes["sub"]
    assert (sub.action, sub.content, sub.mode_now) == ("modify", False, 0o700)
    assert sub.mode_then is not None and sub.mode_then != 0o700 and sub.mode_changed
    link = changes["l"]
    assert (link.action, link.kind_now, link.target_now) == ("remove", "link", "a.txt")
    shown = preview.to_json()
    assert shown["files"][0]["path"] == "proj/a.txt" and shown["steps"][0]["step"] == 1

    (drive / "proj" / "a.txt").write_text("a person's edit\n")
    changed = describe(drive / "proj")
    preview = await platform.rewind_preview(conversation, "1", conversation=False)
    assert [c.path for c in preview.conflicts] == ["proj/a.txt"]
    refused = await platform.rewind(conversation, "1", conversation=False)
    assert refused.refused and [c.path for c in refused.conflicts] == ["proj/a.txt"]
    assert describe(drive / "proj") == changed
    done = await platform.rewind(conversation, "1", conversation=False, force=True)
    assert not done.refused and done.forced and done.restored == 5
    assert describe(drive / "proj") == start
    assert await platform.checkpoints(conversation) == []


async def test_bad_requests_are_clear(platform: Platform, drive: Path) -> None:
    await platform.admin.set_live("checkpoints", True)
    fill(drive, platform.kernel.settings.sandbox_uid)
    conversation = (await platform.runtime.start_conversation()).id
    await step(platform, conversation, "execute", command="rm a.txt", cwd=str(drive / "proj"))
    with pytest.raises(UsageError, match="no step, checkpoint or tool call '9'"):
        await platform.rewind_preview(conversation, "9")
    with pytest.raises(UsageError, match="not neither"):
        await platform.rewind(conversation, "1", files=False, conversation=False)
    with pytest.raises(UsageError, match="files only"):
        await platform.rewind(conversation, "1")  # no tool call row: no history to rewind
    with pytest.raises(UsageError, match="no conversation"):
        await platform.rewind_preview("c_none", "1")
    # Dana may see every conversation but only read the drive: she rewinds no files.
    await platform.identity.create_role("auditor", ["core.exec", "conversations.manage"])
    await platform.identity.create_user("dana", "auditor")
    await platform.admin.grant_source(
        "data", principal_kind="role", principal="auditor", rights="rx"
    )
    with pytest.raises(PolicyDenied, match="write access"):
        await platform.rewind_preview(conversation, "1", conversation=False, user="dana")
    with pytest.raises(PolicyDenied, match="write access"):
        await platform.rewind(conversation, "1", conversation=False, user="dana")
    assert not (drive / "proj" / "a.txt").exists()
