"""connect: every step checked before any write, the fixed order, partial success named,
per-kind grants and lists, and results that never hold a secret."""

from __future__ import annotations

import json
from pathlib import Path

from corral.platform import Platform
from corral.tools.results import ToolResult

SECRET = "tvly-connect-0123456789abcdef"


def everything(result: ToolResult) -> str:
    return result.text + json.dumps(result.data)


async def member(platform: Platform) -> str:
    await platform.identity.create_user("ana", "member")
    return "ana"


async def test_a_refused_kind_stops_the_whole_call_before_any_write(platform: Platform) -> None:
    ana = await member(platform)
    result = await platform.call_tool(
        "connect",
        {
            "add": [
                {"kind": "credential", "name": "tavily", "secret": SECRET},
                {"kind": "mcp", "name": "demo", "command": ["/bin/true"]},
            ],
            "check": [{"kind": "credential", "name": "tavily"}],
        },
        user=ana,
    )
    assert result.is_error and result.error_code == "feature_missing", result.text
    assert "nothing was changed" in result.text
    assert "add mcp 'demo': needs feature 'mcp.connect'" in result.text
    caller = await platform.caller(ana)
    assert await platform.credentials.lookup("tavily", user_id=caller.user_id) is None
    assert SECRET not in everything(result)


async def test_every_bad_input_is_named_at_once(platform: Platform) -> None:
    result = await platform.call_tool(
        "connect",
        {
            "add": [
                {"kind": "credential", "name": "tavily"},
                {"kind": "credential", "name": "brave", "secret": SECRET, "fields": {"x": "1"}},
                {"kind": "mcp", "name": "ghost", "command": ["no-such-program-here"]},
                {"kind": "git", "name": "origin", "url": "https://example.org/r.git"},
            ],
            "remove": [{"kind": "mcp", "name": "never"}, {"kind": "source", "name": "data"}],
            "authorize": [{"kind": "credential", "name": "tavily"}],
        },
    )
    assert result.is_error and result.error_code == "invalid_arguments"
    text = result.text
    assert "'secret' is required" in text
    assert "unknown fields ['x']" in text
    assert "program 'no-such-program-here'" in text
    assert "add git 'origin': fields.repo must be a folder of the project drive" in text
    assert "remove mcp 'never': no mcp server by that name" in text
    assert "governed source workflow" in text
    assert "needs no authorization" in text
    assert len(result.data["error"]["problems"]) == 7  # type: ignore[index]
    owner = await platform.caller()
    assert await platform.credentials.entries(user_id=owner.user_id) == []


async def test_a_refusal_while_applying_keeps_what_was_done(platform: Platform) -> None:
    result = await platform.call_tool(
        "connect",
        {
            "add": [
                {"kind": "credential", "name": "tavily", "secret": SECRET},
                {"kind": "mcp", "name": "mute", "command": ["/bin/false"]},
            ],
            "check": [{"kind": "credential", "name": "tavily"}],
            "list": ["credential"],
        },
    )
    assert result.is_error and result.error_code == "partially_applied", result.text
    assert "done: add credential 'tavily'" in result.text
    assert "refused: add mcp 'mute' [mcp_unavailable]" in result.text
    assert "not attempted: check credential 'tavily'" in result.text
    assert "not listed: credential" in result.text
    owner = await platform.caller()
    assert await platform.credentials.lookup("tavily", user_id=owner.user_id) == SECRET
    assert SECRET not in everything(result)
    listed = await platform.call_tool("connect", {"list": ["mcp"]})
    assert "mute" not in listed.text  # a server that never started is not stored


async def test_steps_apply_in_order_and_answer_with_projections(
    platform: Platform, data_dir: Path
) -> None:
    owner = await platform.caller()
    await platform.credentials.set("brave", "BSA-old-0123456789abcdef", user_id=owner.user_id)
    result = await platform.call_tool(
        "connect",
        {
            "list": ["credential", "source"],
            "check": [{"kind": "credential", "name": "tavily"}, {"kind": "source", "name": "data"}],
            "add": [
                {"kind": "credential", "name": "tavily", "secret": SECRET, "provider": "tavily"},
                {
                    "kind": "credential",
                    "name": "shared",
                    "secret": SECRET + "-p",
                    "fields": {"scope": "project"},
                },
            ],
            "remove": [{"kind": "credential", "name": "brave"}],
        },
    )
    assert not result.is_error, result.text
    data = result.data or {}
    order = [(a["verb"], a["kind"], a["name"]) for a in data["applied"]]
    assert order == [
        ("remove", "credential", "brave"),
        ("add", "credential", "tavily"),
        ("add", "credential", "shared"),
        ("check", "credential", "tavily"),
        ("check", "source", "data"),
    ]
    assert data["applied"][3]["hasValue"] is True
    assert data["applied"][4]["rights"] == ["exec", "read", "write"]
    [credentials, sources] = data["lists"]
    assert {(r["name"], r["scope"], r["hasValue"]) for r in credentials["rows"]} == {
        ("tavily", "user", True),
        ("shared", "project", True),
    }
    assert any(d["name"] == "tavily" for d in credentials["descriptors"])
    assert "data" in [r["name"] for r in sources["rows"]]
    text = everything(result)
    for leaked in (SECRET, "BSA-old", owner.user_id, str(data_dir)):
        assert leaked not in text, leaked


async def test_list_answers_per_kind_with_a_refusal_for_the_kind_out_of_reach(
    platform: Platform,
) -> None:
    ana = await member(platform)
    await platform.call_tool(
        "connect", {"add": [{"kind": "credential", "name": "tavily", "secret": SECRET}]}, user=ana
    )
    result = await platform.call_tool(
        "connect", {"list": ["credential", "mcp", "source", "git"]}, user=ana
    )
    assert not result.is_error, result.text
    lists = {item["kind"]: item for item in (result.data or {})["lists"]}
    assert [r["name"] for r in lists["credential"]["rows"]] == ["tavily"]
    assert lists["mcp"]["code"] == "feature_missing"
    assert lists["git"]["code"] == "feature_missing"
    assert "rows" in lists["source"]
    assert "list mcp: refused [feature_missing]: needs feature 'mcp.connect'" in result.text
    assert SECRET not in everything(result)


async def test_a_member_may_not_store_a_project_credential(platform: Platform) -> None:
    ana = await member(platform)
    result = await platform.call_tool(
        "connect",
        {
            "add": [
                {
                    "kind": "credential",
                    "name": "t",
                    "secret": SECRET,
                    "fields": {"scope": "project"},
                }
            ]
        },
        user=ana,
    )
    assert result.error_code == "feature_missing" and "'admin.settings'" in result.text
