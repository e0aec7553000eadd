"""`corral rewind CONVERSATION --to STEP --files-only`: a conversation's files go back to
how they were before a step, shell writes and file-tool edits alike; a file another
conversation changed since is listed and kept unless --force."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corral.errors import PolicyDenied
from corral.platform import Platform
from corral.shell.checkpoints.rewind import rewind_files
from tests.sandbox_owner import give_to_sandbox
from tests.shell.conftest import needs_bwrap, shells
from tests.shell.test_checkpoints import Described, describe
from tests.shell.test_interfaces import cli

pytestmark = needs_bwrap


def fill(drive: Path, uid: int) -> Described:
    """A project in the drive (the drive's ``.corral`` is the platform's, not the run's)."""
    project = drive / "proj"
    (project / "sub").mkdir(parents=True)
    (project / "sub" / "x.txt").write_text("x\n")
    (project / "a.txt").write_text("one\n")
    (project / "b.txt").write_text("bee\n")
    give_to_sandbox(drive, uid)
    return describe(project)


async def step(platform: Platform, conversation: str, tool: str, **args: str) -> None:
    result = await platform.call_tool(tool, args, conversation_id=conversation)
    assert not result.is_error and result.data is not None, result.text
    assert "checkpoint" in result.data, result.text


async def rewind(platform: Platform, *args: str) -> tuple[int, str, str]:
    return await cli(platform.kernel.settings.data_dir, "rewind", *args)


async def test_rewinding_puts_the_files_back_as_they_were_before_the_step(
    platform: Platform, drive: Path
) -> None:
    await platform.admin.set_live("checkpoints", True)
    states = [fill(drive, platform.kernel.settings.sandbox_uid)]
    conversation = (await platform.runtime.start_conversation()).id
    cwd = str(drive / "proj")
    await step(
        platform, conversation, "execute", command="sed -i s/one/two/ a.txt && rm b.txt", cwd=cwd
    )
    states.append(describe(drive / "proj"))
    await step(platform, conversation, "fs_edit", uri="data://proj/a.txt", old="two", new="2")
    states.append(describe(drive / "proj"))
    command = "mkdir made && echo m > made/m.txt && chmod 600 sub/x.txt && ln -s a.txt l"
    await step(platform, conversation, "execute", command=command, cwd=cwd)
    code, out, err = await rewind(platform, conversation, "--json")
    assert code == 0, err
    listed = [(s["step"], s["tool"]) for s in json.loads(out)]
    assert listed == [(1, "execute"), (2, "fs_edit"), (3, "execute")], out
    code, out, err = await rewind(platform, conversation)
    assert code == 0 and "fs_edit" in out and "step" in out, out + err
    code, out, err = await rewind(platform, conversation, "--to", "3", "--files-only")
    assert code == 0, err
    assert "1 step(s) undone" in out
    assert describe(drive / "proj") == states[2]
    code, out, err = await rewind(platform, conversation, "--to", "1", "--files-only", "--json")
    assert code == 0, out + err
    assert [s["step"] for s in json.loads(out)["steps"]] == [1, 2], out
    assert describe(drive / "proj") == states[0]
    code, _, err = await rewind(platform, conversation, "--to", "1", "--files-only")
    assert code == 2 and "has no checkpoints" in err


async def test_a_file_another_conversation_changed_since_is_a_conflict(
    platform: Platform, drive: Path
) -> None:
    await platform.admin.set_live("checkpoints", True)
    start = fill(drive, platform.kernel.settings.sandbox_uid)
    mine = (await platform.runtime.start_conversation()).id
    other = (await platform.runtime.start_conversation()).id
    cwd = str(drive / "proj")
    await step(platform, mine, "execute", command="sed -i s/one/two/ a.txt && mkdir made", cwd=cwd)
    command = "echo other >> a.txt && echo f > made/foreign.txt"
    await step(platform, other, "execute", command=command, cwd=cwd)
    changed = describe(drive / "proj")
    code, _, err = await rewind(platform, mine, "--to", "1", "--files-only")
    assert code == 1, err
    assert "a.txt: changed since" in err and "made/foreign.txt: made since" in err
    assert "sub" not in err and "b.txt" not in err
    assert describe(drive / "proj") == changed  # refused: nothing touched
    code, out, err = await rewind(platform, mine, "--to", "1", "--files-only", "--force")
    assert code == 0, err
    assert "overwritten:" in out
    assert describe(drive / "proj") == start


async def test_bad_requests_are_clear_errors(platform: Platform, drive: Path) -> None:
    await platform.admin.set_live("checkpoints", True)
    fill(drive, platform.kernel.settings.sandbox_uid)
    conversation = (await platform.runtime.start_conversation()).id
    await step(
        platform, conversation, "execute", command="echo more >> a.txt", cwd=str(drive / "proj")
    )
    for args, expected in [
        (("--to", "1"), "--files-only"),  # no tool call row: no history to rewind
        (("--to", "1", "--conversation-only"), "--files-only"),
        (("--to", "7", "--files-only"), "no step, checkpoint or tool call '7'"),
    ]:
        code, out, err = await rewind(platform, conversation, *args)
        assert code == 2 and expected in err and "Traceback" not in err, (args, out, err)
    code, _, err = await rewind(platform, "c_none", "--to", "1", "--files-only")
    assert code == 2 and "Traceback" not in err, err


async def test_nobody_rewinds_files_they_may_not_write(platform: Platform, drive: Path) -> None:
    await platform.admin.set_live("checkpoints", True)
    start = fill(drive, platform.kernel.settings.sandbox_uid)
    conversation = (await platform.runtime.start_conversation()).id
    await step(platform, conversation, "execute", command="rm a.txt", cwd=str(drive / "proj"))
    await platform.identity.create_role("dev", ["core.exec"])
    await platform.identity.create_user("dana", "dev")
    await platform.admin.grant_source("data", principal_kind="role", principal="dev", rights="rx")
    service = shells(platform)
    dana = await service.writable_roots(await platform.caller("dana"))
    assert dana == set()
    with pytest.raises(PolicyDenied, match="write access"):
        await rewind_files(service.checkpoints, conversation, "1", writable=dana)
    owner = await service.writable_roots(await platform.caller(None))
    outcome = await rewind_files(service.checkpoints, conversation, "1", writable=owner)
    assert not outcome.refused and outcome.restored == 1
    assert describe(drive / "proj") == start
