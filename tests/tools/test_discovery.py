"""Package discovery: entry points, folders, CORRAL_PACKAGE_PATH, and load-time validation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import corral
from corral.tools.registry import discover
from tests.conftest import BROKEN, DEMO, PACKAGES

NATIVE = {
    "execute",
    "delegate",
    "workflow",
    "web_search",
    "web_fetch",
    "ask_question",
    "todos",
    "compact_history",
    "connect",
}


def test_folder_package_is_discovered_with_its_handlers() -> None:
    registry = discover([DEMO])
    assert {"echo", "write_note", "wait", "picture", "sync_echo"} <= set(registry.tools)
    assert registry.tools["echo"].package == "demo"
    assert registry.tools["echo"].is_async
    assert not registry.tools["sync_echo"].is_async
    assert registry.errors == []


def test_package_path_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORRAL_PACKAGE_PATH", os.pathsep.join([str(DEMO), str(BROKEN)]))
    registry = discover()
    assert "echo" in registry.tools and "good" in registry.tools


def test_folder_of_packages_is_scanned() -> None:
    registry = discover([PACKAGES])
    assert {"demo", "broken"} <= set(registry.packages)


def test_builtin_package_loads_through_its_entry_point() -> None:
    registry = discover()
    core = registry.packages["core"]
    assert core.origin == "entry_point"
    # Every native tool is declared with its schema; the ones without a handler stay out.
    assert set(core.pending) | set(core.tools) == NATIVE
    for spec in core.pending.values():
        assert spec.input_schema["type"] == "object"
        assert len(spec.description) > 200


def test_bad_tool_files_are_left_out_with_file_and_pointer() -> None:
    registry = discover([BROKEN])
    assert "good" in registry.tools
    bad = {Path(e.file).name: e for e in registry.errors}
    assert set(bad) == {
        "undescribed.json",
        "bad_schema.json",
        "wrong_type.json",
        "no_handler.json",
        "not_json.json",
    }
    assert bad["undescribed.json"].pointer == (
        "/input_schema/properties/outer/properties/inner/description"
    )
    assert bad["bad_schema.json"].pointer == "/input_schema/properties/n/minimum"
    assert bad["wrong_type.json"].pointer == "/annotations/readOnlyHint"
    assert bad["no_handler.json"].pointer == "/name"
    assert "no handler function 'no_handler'" in bad["no_handler.json"].message
    assert "not valid JSON" in bad["not_json.json"].message
    for name in ("undescribed", "bad_schema", "wrong_type", "no_handler"):
        assert name not in registry.tools


def test_duplicate_tool_name_across_packages_is_an_error(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    (clone / "tools").mkdir(parents=True)
    (clone / "tools" / "echo.json").write_text((DEMO / "tools" / "echo.json").read_text())
    (clone / "handlers.py").write_text("def echo(args, ctx):\n    return 'clone'\n")
    registry = discover([DEMO, clone])
    assert registry.tools["echo"].package == "demo"
    assert any("already taken by package 'demo'" in e.message for e in registry.errors)


def test_handlers_that_fail_to_import_leave_the_package_out(tmp_path: Path) -> None:
    package = tmp_path / "crashy"
    (package / "tools").mkdir(parents=True)
    (package / "tools" / "echo2.json").write_text(
        json.dumps(
            {
                "name": "echo2",
                "description": "Echo, from a package whose handlers crash on import.",
                "input_schema": {"type": "object", "properties": {}},
            }
        )
    )
    (package / "handlers.py").write_text("raise ImportError('missing dependency')\n")
    registry = discover([package])
    assert "echo2" not in registry.tools
    assert "could not import the handlers: ImportError: missing dependency" in str(
        registry.errors[0]
    )


def test_missing_package_folder_is_reported(tmp_path: Path) -> None:
    registry = discover([tmp_path / "nowhere"])
    assert "does not exist" in registry.errors[0].message


async def test_pending_native_tools_are_never_visible(data_dir: Path) -> None:
    async with corral.open(data_dir) as platform:
        visible = {t.name for t in await platform.visible_tools()}
        pending = set(platform.registry.pending)
        assert pending and not (pending & visible)
        result = await platform.call_tool(sorted(pending)[0], {})
        assert result.error_code == "not_visible"


def test_tools_list_cli_shows_load_errors(tmp_path: Path) -> None:
    env = {**os.environ, "CORRAL_PACKAGE_PATH": str(BROKEN), "CORRAL_DATA_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "corral", "tools", "list", "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    listing = json.loads(done.stdout)
    assert "good" in {t["name"] for t in listing["tools"]}
    errors = {(Path(e["file"]).name, e["pointer"]) for e in listing["errors"]}
    assert ("wrong_type.json", "/annotations/readOnlyHint") in errors
    assert NATIVE == {p["name"] for p in listing["pending"]} | (
        NATIVE & {t["name"] for t in listing["tools"]}
    )
