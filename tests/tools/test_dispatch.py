"""The dispatch pipeline: arguments, feature gates, policy, handlers, shaping."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from corral import Cancellation, ImageBlock
from corral.platform import Platform
from corral.tools import dispatch


async def test_trivial_call_succeeds(platform: Platform) -> None:
    result = await platform.call_tool("echo", {"text": "hello"})
    assert not result.is_error and result.text == "hello" and result.status == "ok"


async def test_sync_handler_returning_json(platform: Platform) -> None:
    result = await platform.call_tool("sync_echo", {"n": 7})
    assert result.data == {"n": 7, "tool": "sync_echo"}
    assert '"n": 7' in result.text


@pytest.mark.parametrize(
    ("arguments", "pointer", "fragment"),
    [
        ({}, "/text", "required property 'text' is missing"),
        ({"text": 5}, "/text", "5 is not of type 'string'"),
        ({"text": "x", "repeat": 0}, "/repeat", "less than the minimum"),
        ({"text": "x", "colour": "red"}, "/colour", "unknown property 'colour'"),
    ],
)
async def test_argument_errors_name_the_pointer(
    platform: Platform, arguments: dict[str, object], pointer: str, fragment: str
) -> None:
    result = await platform.call_tool("echo", arguments)
    assert result.error_code == "invalid_arguments"
    assert f"{pointer}: " in result.text and fragment in result.text
    assert result.data is not None
    assert result.data["error"]["errors"][0]["pointer"] == pointer


async def test_arguments_must_be_an_object(platform: Platform) -> None:
    result = await platform.call_tool("echo", ["text"])
    assert result.error_code == "invalid_arguments" and "JSON object" in result.text


async def test_feature_gated_argument_is_refused(platform: Platform, data_dir: Path) -> None:
    await platform.identity.create_role("builder", ["core.exec"])
    await platform.identity.create_user("bob", "builder")
    await platform.admin.grant_source(
        "data", principal_kind="role", principal="builder", rights="rw"
    )
    args = {"path": "data://n.md", "text": "hi", "tag": "x"}
    result = await platform.call_tool("write_note", args, user="bob")
    assert result.error_code == "feature_missing"
    assert "argument 'tag'" in result.text and "'drive.write'" in result.text
    assert not (data_dir / "drive" / "n.md").exists()
    del args["tag"]
    assert not (await platform.call_tool("write_note", args, user="bob")).is_error
    assert (data_dir / "drive" / "n.md").read_text() == "note:hi"


async def test_feature_gated_argument_can_be_dropped_with_a_note(platform: Platform) -> None:
    await platform.identity.create_role("plain", ["core.web"])
    await platform.identity.create_user("pat", "plain")
    result = await platform.call_tool("fetch_like", {"store": "tmp"}, user="pat")
    assert not result.is_error
    assert result.data == {"stored": None}
    assert "argument 'store' was ignored" in result.text
    owner = await platform.call_tool("fetch_like", {"store": "tmp"})
    assert owner.data == {"stored": "tmp"}


async def test_path_arguments_pass_the_uri_policy(platform: Platform, data_dir: Path) -> None:
    denied = await platform.call_tool("write_note", {"path": "/etc/corral-test", "text": "x"})
    assert denied.error_code == "policy_denied" and "not covered by any source" in denied.text
    escaped = await platform.call_tool("write_note", {"path": "data://../corral.db", "text": "x"})
    assert escaped.error_code == "policy_denied"
    assert "platform's own data" in escaped.text
    system = await platform.call_tool("write_note", {"path": "/usr/lib/x", "text": "x"})
    assert system.error_code == "policy_denied" and "grants you r" in system.text
    ok = await platform.call_tool("write_note", {"path": "notes/a.md", "text": "x"})
    assert not ok.is_error and "data://notes/a.md" in ok.text


async def test_handler_errors_become_results(platform: Platform) -> None:
    refused = await platform.call_tool("explode", {"kind": "tool"})
    assert refused.error_code == "demo_refused" and "the demo refused" in refused.text
    bug = await platform.call_tool("explode", {"kind": "bug"})
    assert bug.error_code == "tool_failed" and "RuntimeError: boom" in bug.text


async def test_content_cap_keeps_the_head_with_a_marker(platform: Platform) -> None:
    await platform.admin.set_live("tool_result_content_cap", 1000)
    result = await platform.call_tool("echo", {"text": "abcdefghij\n", "repeat": 500})
    assert result.text.startswith("abcdefghij")
    assert "trimmed 4,500 of 5,500 characters" in result.text
    assert "tool_result_content_cap" in result.text
    assert len(result.text) < 1300


async def test_content_cap_can_keep_the_tail(platform: Platform) -> None:
    await platform.admin.set_live("tool_result_content_cap", 1000)
    lines = "".join(f"line {i:05d}\n" for i in range(1000))
    result = await platform.call_tool("echo", {"text": lines, "keep": "tail"})
    assert result.text.startswith("[… trimmed")
    assert "oldest output" in result.text
    assert result.text.rstrip().endswith("line 00999")
    assert "line 00000" not in result.text


async def test_known_secrets_never_reach_the_result(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import corral
    from tests.conftest import DEMO

    monkeypatch.setenv("DEMO_API_TOKEN", "s3cr3t-value-123456")
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        result = await platform.call_tool("echo", {"text": "key=s3cr3t-value-123456!"})
    assert "s3cr3t" not in result.text and "[redacted]" in result.text


async def test_image_blocks_pass_through(platform: Platform) -> None:
    result = await platform.call_tool("picture", {})
    assert any(isinstance(b, ImageBlock) and b.media_type == "image/png" for b in result.content)
    assert result.text == "a dot"
    assert result.to_json()["content"][1]["type"] == "image"


async def test_stop_ends_a_running_call(platform: Platform) -> None:
    stop = Cancellation()
    started = asyncio.Event()
    call = asyncio.ensure_future(
        platform.call_tool(
            "wait", {"ms": 60_000}, cancellation=stop, output=lambda _s, _t: started.set()
        )
    )
    await asyncio.wait_for(started.wait(), 10)
    stop.cancel()
    result = await asyncio.wait_for(call, 10)
    assert result.status == "stopped" and result.text == "stopped early"


async def test_stop_cancels_a_handler_that_ignores_it(
    platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dispatch, "STOP_GRACE_SECONDS", 0.0)
    stop = Cancellation()
    started = asyncio.Event()
    call = asyncio.ensure_future(
        platform.call_tool("stubborn", {}, cancellation=stop, output=lambda _s, _t: started.set())
    )
    await asyncio.wait_for(started.wait(), 10)
    stop.cancel()
    result = await asyncio.wait_for(call, 10)
    assert result.status == "stopped" and result.error_code == "stopped"
