"""Commands that open the platform without talking to a model (`tools list`, `approvals list`,
`skills list`, `conversations show`) never import pydantic-ai: it costs over a second of
start-up and loads only when a model is resolved or a prompt built (issue 39, item 3)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

MODEL_STACK = ("pydantic_ai", "corral.runtime.loop", "corral.runtime.prompt.history")
LOADED_WHEN_USED = (
    "alembic",
    "corral.shell.analysis",
    "jsonschema",
    "croniter",
    "yaml",
    "asyncpg",
    "cryptography",
    "httpx",
    "httpcore",
    "corral.web.search",
    "corral.packages.core.web_search",
    "corral.packages.core.web_fetch",
    "corral.packages.core.todos",
    "corral.channels",
    "corral.store.channel_tables",
    "corral.packages.core.execute",
    "corral.packages.core.egress_asker",
    "corral.packages.drive.reading",
    "corral.packages.drive.writing",
    "corral.packages.drive.listing",
    "corral.packages.drive.search",
    "corral.packages.drive.pdf_pages",
    "corral.web.extraction",
    "tiktoken",
    "corral.platform.rewind",
    "corral.platform.fork",
    "corral.web.fetch.hosts",
    "corral.web.fetch.policy",
    "corral.web.fetch.urls",
    "idna",
    "anyio",
    "corral.shell.command_rules",
    "corral.shell.service",
    "corral.shell.background",
    "corral.shell.check",
    "corral.shell.checkpoints",
    "corral.shell.egress",
    "corral.shell.host",
    "corral.shell.records",
    "corral.store.shell_tables",
    "corral.packages.core.egress_credentials",
    "pydantic_settings",
    "corral.runtime.workflows",
    "corral.store.workflow_tables",
    "corral.store.trace_tables",
    "corral.store.rule_tables",
    "corral.store.skill_tables",
    "corral.runtime.delegation",
    "corral.store.delegation_tables",
)
"""Modules that load only when their work is due: Alembic when the database is behind the
newest migration, the command analyser (hundreds of patterns compiled) with the first
command analysed, jsonschema with the first tool call or tool file changed since it was
last checked, croniter with the first cron schedule, yaml with the first skill read, asyncpg
with a PostgreSQL store, cryptography with the first credential, sealed approval or egress
certificate, httpx (with its command-line tool's click, rich and pygments) with the first
fetch, HTTP hook or direct vendor post, the built-in tools' handler modules (web_search
with its providers, web_fetch, todos, ..., execute and the drive's fs_* tools, with PDF
pages and extraction) with each tool's first policy check or call, tiktoken with the first
compaction, rewinds and forks with the first one, the fetch policy, host and URL parsing
(idna) and the resolver's thread pool (anyio) with the first fetch, the permission rules' command
judging with the first command judged, the channels family
with the first channel connected, or their service's first use, and the shell service's
family (the guards' checks, egress, checkpoints, background shells and their table) with its
first use, a background shell to recover at open, or serving, the workflows with their
scheduler, webhooks and tables with their first use, a cluster tick or serving, the stored
spans', remembered rules' and run tickets' tables with their first write or read, the
delegate tool's service with a run's end, a lookup or a sweep; the sandbox
probe (confinement and the runner it starts ``true`` with) still runs at every open.
pydantic-settings never loads: the settings read their ``CORRAL_*`` variables themselves."""

COMMAND = """
import gc, json, runpy, sys
sys.argv = ["corral", *sys.argv[1:]]
try:
    runpy.run_module("corral", run_name="__main__")
except SystemExit as stop:
    assert stop.code in (0, None), stop.code
print(json.dumps(gc.get_stats()[2]["collections"]), file=sys.stderr)
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""
"""Prints the full collections the command ran, then the modules it loaded."""

START = """
import asyncio, sys
import corral

async def main(folder):
    async with corral.open(folder) as platform:
        info = await platform.runtime.start_conversation(title="bench")
    print(info.id)

asyncio.run(main(sys.argv[1]))
"""

CHAT = """
import asyncio, json, sys
import corral

async def main(folder, script):
    async with corral.open(folder) as platform:
        turn = await platform.chat("hello", model="script:" + script)
        assert "hi there" in turn.text, turn
    print(json.dumps(sorted(sys.modules)))

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def model_stack_among(modules: list[str]) -> list[str]:
    return [m for m in modules if m.startswith(MODEL_STACK)]


def loaded_when_used_among(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == n or m.startswith(f"{n}.") for n in LOADED_WHEN_USED)]


def run_command(data: Path, *argv: str) -> tuple[str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", COMMAND, "--data-dir", str(data), *argv],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    *_, full_collections, modules = done.stderr.splitlines()
    # Start-up's objects are settled, not walked by the collector (0.2-0.3 s a full pass).
    assert json.loads(full_collections) == 0
    return done.stdout, json.loads(modules)


@pytest.fixture(scope="module")
def data_with_a_conversation(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    data = tmp_path_factory.mktemp("light") / "data"
    done = subprocess.run([sys.executable, "-c", START, str(data)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return data, done.stdout.strip()


@pytest.mark.parametrize(
    ("argv", "shown", "uses"),
    [
        (("tools", "list", "--json"), '"execute"', ()),
        (("approvals", "list", "--json"), "[", ()),
        # Listing skills reads their SKILL.md front matter: that is yaml's work.
        (("skills", "list", "--json"), '"execute"', ("yaml",)),
    ],
)
def test_listing_commands_leave_the_model_stack_unloaded(
    data_with_a_conversation: tuple[Path, str],
    argv: tuple[str, ...],
    shown: str,
    uses: tuple[str, ...],
) -> None:
    data, _ = data_with_a_conversation
    out, loaded = run_command(data, *argv)
    assert shown in out
    assert "corral.platform" in loaded and "corral.runtime.runtime" in loaded
    assert model_stack_among(loaded) == []
    unused = [m for m in loaded_when_used_among(loaded) if m.split(".")[0] not in uses]
    assert unused == []


def test_showing_a_conversation_leaves_the_model_stack_unloaded(
    data_with_a_conversation: tuple[Path, str],
) -> None:
    data, conversation_id = data_with_a_conversation
    out, loaded = run_command(data, "conversations", "show", conversation_id, "--json")
    assert json.loads(out)["conversation"]["id"] == conversation_id
    assert model_stack_among(loaded) == []
    assert loaded_when_used_among(loaded) == []


TOOL_CALL = """
import asyncio, json, sys
import corral

async def main(folder, conversation_id):
    async with corral.open(folder) as platform:
        before = "corral.packages.core.todos" in sys.modules
        result = await platform.call_tool(
            "todos", {"plan": {"steps": ["write it"]}}, conversation_id=conversation_id
        )
        assert not result.is_error, result
    print(json.dumps([before, "corral.packages.core.todos" in sys.modules]))

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def test_a_tool_handler_module_loads_with_the_tools_first_call(
    data_with_a_conversation: tuple[Path, str],
) -> None:
    data, conversation_id = data_with_a_conversation
    done = subprocess.run(
        [sys.executable, "-c", TOOL_CALL, str(data), conversation_id],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == [False, True]


def test_a_chat_still_loads_the_model_stack_when_it_needs_it(
    data_with_a_conversation: tuple[Path, str], tmp_path: Path
) -> None:
    data, _ = data_with_a_conversation
    script = tmp_path / "model.json"
    script.write_text(json.dumps({"turns": [{"text": "hi there"}]}))
    done = subprocess.run(
        [sys.executable, "-c", CHAT, str(data), str(script)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.splitlines()[-1])
    assert "pydantic_ai" in loaded and "corral.runtime.loop" in loaded


COUNTED = """
import json, runpy, sys
import corral.settings

calls = []
load = corral.settings.load_settings

def counted(*args, **kwargs):
    calls.append(args)
    return load(*args, **kwargs)

corral.settings.load_settings = counted
sys.argv = ["corral", *sys.argv[1:]]
try:
    runpy.run_module("corral", run_name="__main__")
except SystemExit as stop:
    assert stop.code in (0, None), stop.code
print(len(calls), file=sys.stderr)
"""


def test_a_command_reads_its_settings_once(data_with_a_conversation: tuple[Path, str]) -> None:
    data, _ = data_with_a_conversation
    done = subprocess.run(
        [sys.executable, "-c", COUNTED, "--data-dir", str(data), "approvals", "list", "--json"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert done.stderr.splitlines()[-1] == "1"
