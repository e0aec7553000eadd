"""Background shells: start, read, stop, report, and survive (or not) a restart."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import corral
from corral.errors import NotFound, PolicyDenied
from corral.platform import Platform
from corral.shell.processes import wait_gone
from corral.tools.services import Services
from tests.conftest import DEMO
from tests.shell.conftest import AllowReaders, FakeReports, dead, host_pids, needs_bwrap, shells


def log_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def start(platform: Platform, command: str, **extra: Any) -> dict[str, Any]:
    result = await platform.call_tool(
        "execute", {"command": command, "background": True}, conversation_id="conv-1", **extra
    )
    assert result.status == "ok", result.text
    assert result.data is not None
    return result.data


async def read_until(platform: Platform, shell_id: str, marker: str) -> list[dict[str, Any]]:
    """Long-poll the output route until ``marker`` shows up (no sleeping)."""
    caller = await platform.caller()
    rows: list[dict[str, Any]] = []
    after = 0
    for _ in range(50):
        page = await shells(platform).background.output(shell_id, caller, after=after, wait=5)
        rows += page["rows"]
        after = page["next_after"]
        if marker in "".join(r["text"] for r in rows):
            return rows
    raise AssertionError(f"{marker!r} never appeared in {rows!r}")


@needs_bwrap
async def test_lifecycle_output_log_and_report(fast: Platform) -> None:
    sink = FakeReports()
    fast.provide(reports=sink)
    data = await start(fast, "echo one; echo two >&2; printf 'three\\n'; exit 3")
    shell_id = data["shell_id"]
    assert data["status_uri"] == f"corral://shells/{shell_id}"
    assert data["output_uri"] == f"corral://shells/{shell_id}/output"
    record = await shells(fast).background.wait_ended(shell_id, 10)
    assert (record.status, record.exit_code, record.report_state) == ("exited", 3, "reported")
    rows = log_rows(Path(record.log_path))
    assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1))
    assert {r["stream"] for r in rows} == {"stdout", "stderr"}
    assert "".join(r["text"] for r in rows if r["stream"] == "stdout") == "one\nthree\n"
    assert str(record.log_path).startswith(str(fast.settings.private_dir / "runs"))
    (report,) = sink.reports
    assert report["conversation_id"] == "conv-1" and report["source_id"] == shell_id
    assert report["user_id"] == "u_owner" and report["source"] == "shell"
    assert "exit code 3" in report["title"] and "one" in report["text"]
    assert report["data"]["exit_code"] == 3


@needs_bwrap
async def test_report_keeps_head_and_tail_within_budget(fast: Platform) -> None:
    sink = FakeReports()
    fast.provide(reports=sink)
    await fast.admin.set_live("shell_report_tail_chars", 400)
    data = await start(fast, "seq -f 'row %g' 20000")
    await shells(fast).background.wait_ended(data["shell_id"], 10)
    text = sink.reports[0]["text"]
    assert "row 1\n" in text and "row 20000" in text and "characters left out" in text
    assert len(text) < 1_200


@needs_bwrap
async def test_stop_is_for_the_starter_and_reading_for_conversation_readers(
    fast: Platform,
) -> None:
    sink = FakeReports()
    fast.provide(reports=sink)
    await fast.identity.create_role("dev", ["core.exec"])
    bob = await fast.identity.create_user("bob", "dev")
    data = await start(fast, "echo up; sleep 4901")
    shell_id = data["shell_id"]
    await read_until(fast, shell_id, "up")
    background = shells(fast).background
    (work,) = await fast.runtime.background_work[0].running_work("conv-1")
    assert (work["kind"], work["id"], work["title"]) == ("shell", shell_id, "echo up; sleep 4901")
    bob_caller = await fast.caller("bob")
    with pytest.raises(NotFound):
        await background.output(shell_id, bob_caller)
    fast.provide(conversation_access=AllowReaders(bob))
    page = await background.output(shell_id, bob_caller)
    assert page["rows"][0]["text"] == "up\n" and page["shell"]["status"] == "running"
    with pytest.raises(PolicyDenied, match="not yours to stop"):
        await background.stop(shell_id, bob_caller)
    pids = host_pids("sleep 4901")
    assert pids
    record = await background.stop(shell_id, await fast.caller())
    assert record.status == "stopped" and record.report_state == "reported"
    assert await background.running_work("conv-1") == []
    assert all(dead(pid) for pid in pids)
    assert "was stopped" in sink.reports[0]["title"]


@needs_bwrap
async def test_report_waits_in_the_store_without_a_sink_or_when_notify_is_off(
    fast: Platform,
) -> None:
    first = await start(fast, "echo quiet")
    record = await shells(fast).background.wait_ended(first["shell_id"], 10)
    assert record.report_state == "pending" and record.report is not None
    sink = FakeReports()
    fast.provide(reports=sink)
    assert await shells(fast).background.deliver_pending() == 1
    assert sink.reports[0]["source_id"] == first["shell_id"]
    await fast.admin.set_live("shell_background_notify", False)
    second = await start(fast, "echo unannounced")
    record = await shells(fast).background.wait_ended(second["shell_id"], 10)
    assert record.report_state == "disabled" and len(sink.reports) == 1


@needs_bwrap
async def test_closing_the_platform_ends_its_shells_and_reports_them_next_start(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with corral.open(data_dir) as first:
        data = await start(first, "echo begun; sleep 4902")
        await read_until(first, data["shell_id"], "begun")
        pids = host_pids("sleep 4902")
    assert pids and all(dead(pid) for pid in pids)
    sink = FakeReports()

    async with corral.open(data_dir, services=Services(reports=sink)) as second:
        record = await shells(second).background.get(data["shell_id"])
    assert record.status == "lost" and record.report_state == "reported"
    assert "shut down" in record.detail and "begun" in sink.reports[0]["text"]


@needs_bwrap
async def test_prompt_lists_shells_of_other_instances_without_a_query_per_step(
    fast: Platform, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = await start(fast, "echo up; sleep 4904")
    await read_until(fast, data["shell_id"], "up")
    async with corral.open(data_dir, package_paths=[DEMO]) as other:
        background = shells(other).background
        queries = 0
        find = background.store.find

        async def counting_find(**kwargs: Any) -> Any:
            nonlocal queries
            queries += 1
            return await find(**kwargs)

        monkeypatch.setattr(background.store, "find", counting_find)
        for _ in range(5):
            (work,) = await background.running_work("conv-1")
            assert work["id"] == data["shell_id"]
        assert queries == 1  # cached between steps
        monkeypatch.setattr("corral.shell.background.OTHERS_REFRESH_SECONDS", 0.0)
        await shells(fast).background.stop(data["shell_id"], await fast.caller())
        assert await background.running_work("conv-1") == []
    # the starting instance answers from memory
    assert await shells(fast).background.running_work("conv-1") == []


CRASHING_CHILD = textwrap.dedent(
    """
    import asyncio, sys
    import corral

    async def main():
        async with corral.open(sys.argv[1]) as platform:
            result = await platform.call_tool(
                "execute",
                {"command": f"sleep {sys.argv[2]} & echo up; wait", "background": True},
                conversation_id="conv-crash",
            )
            shell_id = result.data["shell_id"]
            caller = await platform.caller()
            shells = platform.services.shells.background
            text, after = "", 0
            for _ in range(20):
                page = await shells.output(shell_id, caller, after=after, wait=5)
                text += "".join(row["text"] for row in page["rows"])
                after = page["next_after"]
                if "up" in text:
                    break
            print(shell_id if "up" in text else "never-up", flush=True)
            await asyncio.Event().wait()

    asyncio.run(main())
    """
)


@needs_bwrap
async def test_a_shell_is_reported_lost_after_the_platform_dies(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "child.py"
    script.write_text(CRASHING_CHILD)
    # A length no other run uses: a stray from an earlier, killed test run is not counted.
    seconds = str(random.randrange(100_000, 999_999))
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        str(data_dir),
        seconds,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    assert child.stdout is not None
    shell_id = (await asyncio.wait_for(child.stdout.readline(), 120)).decode().strip()
    assert shell_id.startswith("sh_"), shell_id
    pids = host_pids(f"sleep {seconds}")
    assert pids
    # A CLI opening the store meanwhile must not steal the live shell.
    async with corral.open(data_dir) as bystander:
        assert (await shells(bystander).background.get(shell_id)).status == "running"
    child.send_signal(signal.SIGKILL)
    await child.wait()
    sink = FakeReports()

    async with corral.open(data_dir, services=Services(reports=sink)) as restarted:
        record = await shells(restarted).background.get(shell_id)
    assert (record.status, record.report_state) == ("lost", "reported")
    (report,) = sink.reports
    assert report["conversation_id"] == "conv-crash" and "was lost" in report["title"]
    assert "up" in report["text"] and "restarted" in report["text"]
    for pid in pids:
        assert await wait_gone(pid, 5)
