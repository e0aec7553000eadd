"""tool_search: tools beyond the native and pinned ones are deferred when their schemas
take more than the live share of the model's context; the model finds them by regex or
BM25 and gets them in full from its next step. Only visible tools are ever found, and a
found tool passes the same pipeline (approval included) as any other."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from corral.errors import FeatureMissing, InvalidArguments, NotFound, NotVisible
from corral.kernel import DEFAULT_AGENT
from corral.platform import Platform
from corral.runtime.prompt import Prompt, PromptRequest
from corral.runtime.runtime import Runtime
from corral.runtime.tool_search.context_windows import FALLBACK_CONTEXT_TOKENS, context_window
from corral.runtime.tool_search.deferral import DeferralRequest, SchemaTokens, plan_tools
from corral.runtime.tool_search.matching import search
from corral.server import create_app
from corral.tools.call import CallRequest
from corral.tools.contract import ToolSpec, parse_tool
from corral.tools.narrowing import Narrowing
from corral.tools.registry import LoadedTool
from tests.runtime.conftest import ScriptWriter, call


@dataclass(frozen=True, slots=True)
class Seen:
    tools: tuple[str, ...]
    system: str


@pytest.fixture
def seen(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> list[Seen]:
    """The tool definitions and system prompt of every prompt the runtime builds."""
    builds: list[Seen] = []
    build = rt.prompt.build

    async def recording(request: PromptRequest) -> Prompt:
        prompt = await build(request)
        names = tuple(t.name for t in prompt.parameters.function_tools)
        builds.append(Seen(names, prompt.system))
        return prompt

    monkeypatch.setattr(rt.prompt, "build", recording)
    return builds


def spec(name: str, description: str, **parameters: str) -> ToolSpec:
    raw = {
        "name": name,
        "description": description,
        "input_schema": {
            "type": "object",
            "properties": {p: {"type": "string", "description": d} for p, d in parameters.items()},
        },
    }
    parsed = parse_tool(raw, file=f"{name}.json", package="t")
    assert isinstance(parsed, ToolSpec), parsed
    return parsed


SPECS = [
    spec("time_get_current_time", "Get the current time in a time zone.", timezone="IANA name"),
    spec("time_convert_time", "Convert a time between time zones.", source_timezone="From"),
    spec("git_status", "Show the working tree status of a repository.", repo_path="Repo"),
    spec("git_log", "Show the commit log; each entry has its time.", repo_path="Repo"),
    spec("memory_search_nodes", "Search the knowledge graph.", query="Words"),
]


def names(found: Sequence[Any]) -> list[str]:
    return [m.spec.name for m in found]


# -- ranking ------------------------------------------------------------------------------


def test_bm25_ranks_the_tool_whose_name_and_words_match_first() -> None:
    found = search(SPECS, "current time zone", mode="bm25", limit=5)
    assert names(found)[:2] == ["time_get_current_time", "time_convert_time"]
    assert "memory_search_nodes" not in names(found)  # no query word in it
    assert found[0].score > found[1].score > 0


def test_bm25_finds_by_parameter_names_and_respects_the_limit() -> None:
    top = names(search(SPECS, "repo path", mode="bm25", limit=1))
    assert len(top) == 1 and top[0] in {"git_status", "git_log"}
    assert set(names(search(SPECS, "repo path", mode="bm25", limit=5))) == {
        "git_status",
        "git_log",
    }


def test_regex_ranks_a_name_hit_above_a_description_hit() -> None:
    found = search(SPECS, "time", mode="regex", limit=5)
    # Names first (alphabetical among equals), then git_log whose description says "time".
    assert names(found) == ["time_convert_time", "time_get_current_time", "git_log"]
    assert names(search(SPECS, "^GIT_", mode="regex", limit=5)) == ["git_log", "git_status"]
    assert names(search(SPECS, "source_timezone", mode="regex", limit=5)) == ["time_convert_time"]


def test_bad_queries_are_refused_saying_what_to_do() -> None:
    with pytest.raises(InvalidArguments, match="not a valid regular expression"):
        search(SPECS, "time(", mode="regex", limit=5)
    with pytest.raises(InvalidArguments, match="at most 200"):
        search(SPECS, "a" * 201, mode="regex", limit=5)
    with pytest.raises(InvalidArguments, match="no words"):
        search(SPECS, "?!", mode="bm25", limit=5)


# -- when tools are deferred --------------------------------------------------------------


def loaded(spec: ToolSpec, package: str) -> LoadedTool:
    return LoadedTool(spec=spec, package=package, handler=lambda a, c: None, is_async=False)


def test_deferral_triggers_above_the_share_and_not_at_or_below_it() -> None:
    native = loaded(spec("execute", "Run a shell command in the sandbox.", command="Cmd"), "core")
    search_tool = loaded(spec("tool_search", "Find tools not loaded yet.", query="Q"), "core")
    mcp = [loaded(s, "mcp") for s in SPECS]
    tools = [native, search_tool, *mcp]
    tokens = SchemaTokens()
    total = sum(tokens(t.spec) for t in [native, *mcp])

    def plan(context: int, mode: str = "auto", pins: tuple[str, ...] = ()) -> Any:
        request = DeferralRequest(
            mode=mode,
            share_percent=10.0,
            context_tokens=context,
            core=lambda t: t.package == "core" or t.name in pins,
            loaded={"git_log"},
        )
        return plan_tools(tools, request, tokens)

    at_share = plan(total * 10)  # the schemas take exactly 10 %: nothing is deferred
    assert [t.name for t in at_share.shown] == ["execute", *[s.name for s in SPECS]]
    assert at_share.deferred == () and at_share.schema_tokens == total

    above = plan(total * 10 - 10)
    assert [t.name for t in above.shown] == ["execute", "tool_search", "git_log"]
    assert [t.name for t in above.deferred] == [
        "time_get_current_time",
        "time_convert_time",
        "git_status",
        "memory_search_nodes",
    ]
    pinned = plan(total * 10 - 10, pins=("git_status",))
    assert "git_status" in [t.name for t in pinned.shown]
    assert plan(10**9, mode="on").deferred and not plan(1, mode="off").deferred
    # Without tool_search among the visible tools nothing can be deferred.
    alone = plan_tools(
        [native, *mcp],
        DeferralRequest(
            mode="on", share_percent=10, context_tokens=1, core=lambda t: False, loaded=()
        ),
        tokens,
    )
    assert alone.deferred == ()


def test_context_windows_come_from_the_price_data() -> None:
    assert context_window("anthropic:claude-sonnet-4-5") == 200_000
    assert context_window("openai:gpt-5") == 400_000
    assert context_window("script:/x.json") == FALLBACK_CONTEXT_TOKENS
    assert context_window("ollama:no-such-model") == FALLBACK_CONTEXT_TOKENS


async def test_small_tool_lists_are_given_in_full_and_large_ones_deferred(
    rt_platform: Platform, write_script: ScriptWriter, seen: list[Seen]
) -> None:
    model = write_script({"text": "one"}, {"text": "two"})
    first = await rt_platform.chat("hello", model=model)
    assert "echo" in seen[-1].tools and "execute" in seen[-1].tools
    assert "tool_search" not in seen[-1].tools and "<deferred_tools>" not in seen[-1].system

    await rt_platform.admin.set_live("tool_search_share_percent", 0.1)  # 128 tokens
    await rt_platform.chat("again", conversation_id=first.conversation_id)
    shown, system = seen[-1].tools, seen[-1].system
    assert {"execute", "delegate", "tool_search"} <= set(shown)  # native tools stay
    assert "echo" not in shown and "\necho\n" in system
    assert "<deferred_tools>" in system

    await rt_platform.admin.set_live("tool_search", "off")
    await rt_platform.chat("and again", conversation_id=first.conversation_id)
    assert "echo" in seen[-1].tools and "tool_search" not in seen[-1].tools


async def test_a_scripted_run_finds_a_deferred_tool_and_calls_it(
    rt_platform: Platform, write_script: ScriptWriter, seen: list[Seen]
) -> None:
    await rt_platform.admin.set_live("tool_search", "on")
    model = write_script(
        {"tool_calls": [call("tool_search", query="return the given text unchanged", limit=1)]},
        {"tool_calls": [call("echo", text="found me")]},
        {"text": "done"},
        {"tool_calls": [call("echo", text="still loaded")]},
        {"text": "done again"},
    )
    turn = await rt_platform.chat("use echo", model=model)
    assert turn.status == "finished", turn.detail
    assert "echo" not in seen[0].tools and "\necho\n" in seen[0].system
    assert "echo" in seen[1].tools and "\necho\n" not in seen[1].system
    results = [r for r in turn.rows if r.kind == "tool_result"]
    assert [r.data["tool"] for r in results] == ["tool_search", "echo"]
    assert results[0].data["result"]["data"]["loaded"] == ["echo"]
    assert "echo(text, repeat, keep)" in results[0].data["result"]["content"][0]["text"]
    assert results[1].data["result"]["content"][0]["text"] == "found me"

    # A later run of the conversation keeps what was loaded.
    count = len(seen)
    again = await rt_platform.chat("once more", conversation_id=turn.conversation_id)
    assert again.status == "finished" and "echo" in seen[count].tools


async def test_a_hidden_tool_is_never_found(
    rt_platform: Platform, write_script: ScriptWriter, seen: list[Seen]
) -> None:
    await rt_platform.admin.set_live("tool_search", "on")
    await rt_platform.admin.set_tool_enabled("default", "explode", False)
    model = write_script(
        {"tool_calls": [call("tool_search", query="explode", mode="regex", limit=20)]},
        {"text": "done"},
    )
    turn = await rt_platform.chat("find explode", model=model)
    [result] = [r for r in turn.rows if r.kind == "tool_result"]
    assert result.data["result"]["data"]["loaded"] == []
    assert "No tool you can use matches" in result.data["result"]["content"][0]["text"]
    assert "explode" not in seen[-1].tools and "explode" not in seen[-1].system
    # The same search over every tool would have found it.
    everything = [t.spec for t in rt_platform.kernel.registry.tools.values()]
    assert "explode" in names(search(everything, "explode", mode="regex", limit=20))
    direct = await rt_platform.call_tool("tool_search", {"query": "explode", "mode": "regex"})
    assert not direct.is_error and (direct.data or {})["loaded"] == []


async def test_a_found_tool_still_needs_its_approval(
    rt_platform: Platform, write_script: ScriptWriter
) -> None:
    await rt_platform.admin.set_live("tool_search", "on")
    model = write_script(
        {"tool_calls": [call("tool_search", query="^write_note$", mode="regex")]},
        {"tool_calls": [call("write_note", path="data://n.md", text="x")]},
        {"text": "done"},
    )
    turn = await rt_platform.chat("write a note", model=model)
    assert turn.status == "parked" and [w.tool for w in turn.waiting] == ["write_note"]


async def test_a_pinned_tool_is_never_deferred(
    rt_platform: Platform, write_script: ScriptWriter, seen: list[Seen]
) -> None:
    await rt_platform.admin.set_live("tool_search", "on")
    with pytest.raises(NotFound, match="no tool named 'ghost'"):
        await rt_platform.admin.set_pinned_tools("default", ["ghost"])
    await rt_platform.admin.set_pinned_tools("default", ["echo"])
    assert await rt_platform.admin.pinned_tools("default") == ["echo"]
    await rt_platform.chat("hello", model=write_script({"text": "hi"}))
    assert "echo" in seen[-1].tools and "wait" not in seen[-1].tools
    assert "\necho\n" not in seen[-1].system and "\nwait\n" in seen[-1].system


async def test_pins_are_set_and_shown_over_http(rt_platform: Platform) -> None:
    owner = await rt_platform.identity.create_token("owner")
    await rt_platform.identity.create_user("max", "member")
    member = await rt_platform.identity.create_token("max")
    transport = httpx.ASGITransport(app=create_app(rt_platform))
    async with httpx.AsyncClient(transport=transport, base_url="http://corral.test") as http:
        path = "/agents/default/pinned"
        as_owner = {"Authorization": f"Bearer {owner.token}"}
        done = await http.put(path, json={"tools": ["echo"]}, headers=as_owner)
        assert done.status_code == 200 and done.json()["pinned_tools"] == ["echo"]
        ghost = await http.put(path, json={"tools": ["ghost"]}, headers=as_owner)
        assert ghost.status_code == 404 and "no tool named 'ghost'" in ghost.text
        as_member = {"Authorization": f"Bearer {member.token}"}
        refused = await http.put(path, json={"tools": []}, headers=as_member)
        assert refused.status_code == 403
    assert await rt_platform.admin.pinned_tools("default") == ["echo"]


async def test_a_subagent_never_finds_a_tool_its_delegate_call_blocked(
    rt_platform: Platform, write_script: ScriptWriter
) -> None:
    await rt_platform.admin.set_live("tool_search", "on")
    child = write_script(
        {"tool_calls": [call("tool_search", query="^(echo|wait)$", mode="regex")]},
        {"text": "searched"},
        name="child",
    )
    parent = write_script(
        {"tool_calls": [call("delegate", task="t", model=child, blocked_tools=["echo"])]},
        {"text": "done"},
    )
    turn = await rt_platform.chat("go", model=parent, profile="auto")
    [delegated] = [r for r in turn.rows if r.kind == "tool_result"]
    child_rows = await rt_platform.runtime.conversations.rows(
        (
            await rt_platform.runtime.runs.get(delegated.data["result"]["data"]["run_id"])
        ).conversation_id
    )
    [found] = [r for r in child_rows if r.kind == "tool_result"]
    assert found.data["result"]["data"]["loaded"] == ["wait"]  # echo is out of its reach


async def test_a_loaded_tool_hidden_later_is_not_given_again(
    rt_platform: Platform, write_script: ScriptWriter, seen: list[Seen]
) -> None:
    await rt_platform.admin.set_live("tool_search", "on")
    model = write_script(
        {"tool_calls": [call("tool_search", query="^echo$", mode="regex")]},
        {"text": "found"},
        {"text": "again"},
    )
    turn = await rt_platform.chat("find echo", model=model)
    assert "echo" in seen[-1].tools
    await rt_platform.admin.set_tool_enabled("default", "echo", False)
    await rt_platform.chat("again", conversation_id=turn.conversation_id)
    assert "echo" not in seen[-1].tools and "\necho\n" not in seen[-1].system


# -- visibility, exactly ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Scope:
    user: str | None = None
    agent: str | None = None
    narrowing: Narrowing | None = None


async def _scope(platform: Platform, case: str) -> tuple[Scope, set[str]]:
    """A caller and run that see less than the owner does, and tools it must not see."""
    if case == "role":
        await platform.identity.create_role("web_only", ["core.web"])
        await platform.identity.create_user("rita", "web_only")
        return Scope(user="rita"), {"execute", "fs_read", "delegate", "write_note"}
    if case == "agent":
        await platform.admin.ensure_agent("narrow")
        await platform.admin.set_custom_tools("narrow", ["tool_search", "echo", "fs_read"])
        return Scope(agent="narrow"), {"wait", "execute", "fs_write"}
    if case == "package":
        await platform.admin.set_package_enabled("demo", False)
        return Scope(), {"echo", "wait", "write_note"}
    narrowing = Narrowing(
        tools=frozenset({"tool_search", "echo", "wait", "fs_read", "fs_write", "confirm"}),
        blocked_tools=frozenset({"wait"}),
        disabled_packages=frozenset({"drive"}),
        subagent=True,
    )
    return Scope(narrowing=narrowing), {"wait", "fs_read", "fs_write", "confirm", "execute"}


@pytest.mark.parametrize("case", ["role", "agent", "package", "run"])
async def test_search_finds_exactly_the_tools_the_caller_may_call(
    rt_platform: Platform, case: str
) -> None:
    scope, hidden = await _scope(rt_platform, case)
    kernel = rt_platform.kernel
    caller = await rt_platform.caller(scope.user)
    callable_, found = set(), set()
    for name in kernel.registry.tools:
        if name == "tool_search":
            continue
        request = CallRequest(
            tool=name,
            arguments={},
            caller=caller,
            agent=scope.agent or DEFAULT_AGENT,
            narrowing=scope.narrowing or Narrowing(),
        )
        try:  # the visibility stage's own check, which every call of the tool passes
            kernel.dispatcher.visible_tool(request, await kernel.config.dispatch_state())
            callable_.add(name)
        except (NotVisible, FeatureMissing):
            pass
        result = await rt_platform.call_tool(
            "tool_search",
            {"query": f"^{name}$", "mode": "regex"},
            caller=caller,
            agent=scope.agent,
            narrowing=scope.narrowing,
        )
        assert not result.is_error, result.content
        found |= set((result.data or {})["loaded"])
    assert found == callable_
    assert hidden.isdisjoint(found) and "echo" in found | hidden


async def test_a_tool_loaded_then_hidden_is_refused_when_called(
    rt_platform: Platform, write_script: ScriptWriter
) -> None:
    await rt_platform.admin.set_live("tool_search", "on")
    model = write_script(
        {"tool_calls": [call("tool_search", query="^echo$", mode="regex")]},
        {"tool_calls": [call("echo", text="before")]},
        {"text": "found"},
        {"tool_calls": [call("echo", text="after")]},
        {"text": "refused"},
    )
    turn = await rt_platform.chat("find echo", model=model)
    before = [r for r in turn.rows if r.kind == "tool_result"][-1].data["result"]
    assert not before["is_error"] and before["content"][0]["text"] == "before"
    await rt_platform.admin.set_tool_enabled("default", "echo", False)
    again = await rt_platform.chat("again", conversation_id=turn.conversation_id)
    [after] = [r.data["result"] for r in again.rows if r.kind == "tool_result"]
    assert after["is_error"] and after["data"]["error"]["code"] == "not_visible"
    assert "switched off for agent 'default'" in after["content"][0]["text"]


# -- a found tool keeps its approval and policy -------------------------------------------


Outcome = tuple[str, tuple[str, ...], bool, str | None, str]


async def _outcome(platform: Platform, model: str, profile: str, tool: str) -> Outcome:
    """How a run calling ``tool`` went: parked for which tools, then the call's result
    (approving whatever was asked)."""
    turn = await platform.chat(f"call {tool}", model=model, profile=profile)
    waiting = tuple(w.tool for w in turn.waiting)
    rows = turn.rows
    if turn.status == "parked":
        for approval in turn.approvals:
            await platform.decide_approval(approval, "approve")
        assert (await platform.runtime.wait_run(turn.run_id)).status == "finished"
        rows = (await platform.runtime.result(turn.run_id)).rows
    [result] = [
        r.data["result"] for r in rows if r.kind == "tool_result" and r.data["tool"] == tool
    ]
    error = (result.get("data") or {}).get("error") or {}
    return turn.status, waiting, result["is_error"], error.get("code"), result["content"][0]["text"]


@pytest.mark.parametrize(
    ("profile", "tool", "arguments", "expected"),
    [
        ("safe", "write_note", {"path": "data://n.md", "text": "x"}, ("parked", None)),
        ("auto", "write_note", {"path": "data://n.md", "text": "x"}, ("finished", None)),
        (
            "safe",
            "write_note",
            {"path": "nosuch://n.md", "text": "x"},
            ("finished", "policy_denied"),
        ),  # policy comes before approval
        (
            "auto",
            "write_note",
            {"path": "data://../n.md", "text": "x"},
            ("finished", "policy_denied"),
        ),
        ("safe", "echo", {"text": "hi"}, ("finished", None)),
    ],
)
async def test_loading_a_found_tool_changes_nothing_about_its_approval_or_policy(
    rt_platform: Platform,
    write_script: ScriptWriter,
    profile: str,
    tool: str,
    arguments: dict[str, Any],
    expected: tuple[str, str | None],
) -> None:
    direct = write_script({"tool_calls": [call(tool, **arguments)]}, {"text": "done"})
    await rt_platform.admin.set_live("tool_search", "off")
    given = await _outcome(rt_platform, direct, profile, tool)

    searched = write_script(
        {"tool_calls": [call("tool_search", query=f"^{tool}$", mode="regex")]},
        {"tool_calls": [call(tool, **arguments)]},
        {"text": "done"},
    )
    await rt_platform.admin.set_live("tool_search", "on")
    found = await _outcome(rt_platform, searched, profile, tool)

    assert found == given
    status, waiting, is_error, code, _ = given
    assert (status, code) == expected and is_error == (code is not None)
    assert waiting == ((tool,) if status == "parked" else ())
