"""The six official reference MCP servers, pinned (scripts/mcp-test-servers), connected over
stdio through connect as a new user would: every tool each offers is usable through the
pipeline, and a real call to one of each returns its answer (no network: fetch reads a page
from a loopback server). The filesystem server works inside the caller's roots only."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from corral.packages.core.mcp_package import tool_name
from corral.packages.core.mcp_servers import McpServers
from corral.platform import Platform
from tests.packages.core.official_mcp_servers import node_server, python_server
from tests.sandbox_owner import git, give_to_sandbox


async def connect(platform: Platform, name: str, command: list[str]) -> dict[str, Any]:
    """Connect the server and check that every tool it offers became usable."""
    added = await platform.call_tool(
        "connect", {"add": [{"kind": "mcp", "name": name, "command": command}], "list": ["mcp"]}
    )
    assert not added.is_error, added.text
    [row] = [r for r in (added.data or {})["lists"][0]["rows"] if r["name"] == name]
    assert row["state"] == "connected" and row["leftOut"] == [], row
    live = platform.services.require(McpServers).connection(name)
    assert live is not None and live.tools, f"{name} offers no tools"
    offered = {tool_name(name, tool.name) for tool in live.tools}
    assert offered <= set(row["tools"]), sorted(offered - set(row["tools"]))
    visible = {tool.name for tool in await platform.visible_tools()}
    assert offered <= visible, sorted(offered - visible)
    return dict(row)


def server_log(data_dir: Path, name: str) -> str:
    """The server's stderr and log messages: what a failing assertion shows."""
    return "\n" + (data_dir / "private" / "mcp" / name / "stderr.log").read_text()


async def logged(data_dir: Path, name: str, words: str, within: float = 60.0) -> None:
    """Until the server's stderr holds ``words`` (a condition polled, not a timed pause)."""
    log = data_dir / "private" / "mcp" / name / "stderr.log"
    async with asyncio.timeout(within):
        while True:
            if log.exists() and words in log.read_text(errors="replace"):
                return
            await asyncio.sleep(0.05)


def source_folder(platform: Platform, data_dir: Path, name: str) -> Path:
    """A folder the sandbox uid may read, beside the data folder."""
    folder = data_dir.parent / name
    folder.mkdir(mode=0o755)
    return folder


async def register(platform: Platform, name: str, folder: Path, rights: str = "r") -> None:
    source = {"kind": "source", "name": name, "fields": {"root": str(folder), "rights": rights}}
    added = await platform.call_tool("connect", {"add": [source]})
    assert not added.is_error, added.text


async def test_time(platform: Platform) -> None:
    row = await connect(platform, "time", python_server("mcp-server-time"))
    assert sorted(row["tools"]) == ["time_convert_time", "time_get_current_time"]
    now = await platform.call_tool("time_get_current_time", {"timezone": "UTC"})
    assert not now.is_error, now.text
    assert json.loads(now.text)["timezone"] == "UTC"


async def test_git(platform: Platform, data_dir: Path) -> None:
    repo = source_folder(platform, data_dir, "repo")
    git("init", "-q", "-b", "main", cwd=repo)
    (repo / "README.md").write_text("hello\n")
    git("add", "README.md", cwd=repo)
    git("-c", "user.name=T", "-c", "user.email=t@example.org", "commit", "-qm", "one", cwd=repo)
    (repo / "new.txt").write_text("untracked\n")
    give_to_sandbox(repo, platform.kernel.settings.sandbox_uid)
    await register(platform, "repo", repo)
    row = await connect(platform, "git", python_server("mcp-server-git"))
    assert len(row["tools"]) >= 10, row["tools"]
    status = await platform.call_tool("git_git_status", {"repo_path": str(repo)})
    assert not status.is_error, status.text
    assert "On branch main" in status.text and "new.txt" in status.text


@pytest.fixture
def page_server() -> Iterator[str]:
    """A page on loopback (robots.txt is absent: fetching is allowed)."""

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = self.path == "/page"
            body = b"<html><body><h1>Hello from loopback</h1><p>A page.</p></body></html>"
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body) if found else 0))
            self.end_headers()
            if found:
                self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/page"
    finally:
        server.shutdown()
        server.server_close()


async def test_fetch(platform: Platform, page_server: str, data_dir: Path) -> None:
    # The page is on the host's loopback, which the egress policy never reaches: the host's
    # network for helpers, as for shell calls (issue 35).
    await platform.admin.set_live("shell_network", True)
    command = [*python_server("mcp-server-fetch"), "--allow-private-ips"]
    row = await connect(platform, "fetch", command)
    assert row["tools"] == ["fetch_fetch"]
    page = await platform.call_tool("fetch_fetch", {"url": page_server})
    assert not page.is_error, page.text + server_log(data_dir, "fetch")
    assert "Hello from loopback" in page.text


async def test_fetch_refuses_loopback_by_default_cleanly(
    platform: Platform, page_server: str
) -> None:
    await connect(platform, "fetch", python_server("mcp-server-fetch"))
    refused = await platform.call_tool("fetch_fetch", {"url": page_server})
    assert refused.is_error and refused.error_code == "mcp_tool_error", refused.text
    assert "private" in refused.text.lower()


async def test_filesystem_sees_the_callers_roots_and_refuses_paths_outside(
    platform: Platform, data_dir: Path
) -> None:
    inside = source_folder(platform, data_dir, "shared")
    (inside / "a.txt").write_text("in a root\n")
    outside = source_folder(platform, data_dir, "elsewhere")
    (outside / "secret.txt").write_text("not in a root\n")
    # Connected before the source exists: the new root reaches it as roots/list_changed.
    row = await connect(platform, "fs", node_server("server-filesystem"))
    assert len(row["tools"]) >= 10, row["tools"]
    await register(platform, "shared", inside)
    # MCP has no word for "roots applied"; the server says so in its log. Corral's own short
    # wait usually covers it; the test waits for the server's word so a loaded machine
    # cannot make it flaky.
    await logged(data_dir, "fs", "Updated allowed directories from MCP roots")
    listed = await platform.call_tool("fs_list_directory", {"path": str(inside)})
    assert not listed.is_error, listed.text + server_log(data_dir, "fs")
    assert "a.txt" in listed.text
    refused = await platform.call_tool("fs_list_directory", {"path": str(outside)})
    assert refused.is_error and "secret.txt" not in refused.text, refused.text
    assert "outside allowed directories" in refused.text or "denied" in refused.text.lower()


async def test_memory(platform: Platform, data_dir: Path) -> None:
    # Its default file sits beside its script, where the sandbox uid may not write.
    graph = data_dir / "mcp" / "memory" / "memory.jsonl"
    command = ["/usr/bin/env", f"MEMORY_FILE_PATH={graph}", *node_server("server-memory")]
    row = await connect(platform, "memory", command)
    assert "memory_create_entities" in row["tools"] and "memory_read_graph" in row["tools"]
    entity = {"name": "Ana", "entityType": "person", "observations": ["likes tea"]}
    made = await platform.call_tool("memory_create_entities", {"entities": [entity]})
    assert not made.is_error, made.text
    read = await platform.call_tool("memory_read_graph", {})
    assert "Ana" in read.text and "likes tea" in read.text, read.text


async def test_sequential_thinking(platform: Platform) -> None:
    row = await connect(platform, "think", node_server("server-sequential-thinking"))
    assert row["tools"] == ["think_sequentialthinking"]
    thought = {
        "thought": "One step is enough.",
        "nextThoughtNeeded": False,
        "thoughtNumber": 1,
        "totalThoughts": 1,
    }
    answer = await platform.call_tool("think_sequentialthinking", thought)
    assert not answer.is_error, answer.text
    assert '"thoughtNumber": 1' in answer.text or '"thoughtNumber":1' in answer.text
