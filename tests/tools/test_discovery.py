"""Package discovery: entry points, folders, CORRAL_PACKAGE_PATH, and load-time validation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import corral
from corral.tools.contract import LoadError, ToolSpec, load_tool_file
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
    "tool_search",
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


@pytest.fixture
def later_package(tmp_path: Path) -> Path:
    """A package declaring the tool ``later`` as pending: its file is there, its handler not."""
    folder = tmp_path / "later_pkg"
    (folder / "tools").mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"name": "later", "pending": ["later"]}))
    (folder / "handlers.py").write_text("")
    declared = json.loads((DEMO / "tools" / "echo.json").read_text())
    (folder / "tools" / "later.json").write_text(json.dumps({**declared, "name": "later"}))
    return folder


async def test_pending_tools_are_never_visible(data_dir: Path, later_package: Path) -> None:
    # Every native tool has its handler now; a package's declared-but-pending tool stands in.
    async with corral.open(data_dir, package_paths=[later_package]) as platform:
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


def _tool(name: str) -> dict[str, object]:
    return {
        "name": name,
        "description": f"{name}, a tool next to files that must not stop it loading.",
        "input_schema": {"type": "object", "properties": {}},
    }


def test_a_deeply_nested_tool_file_is_left_out_and_the_rest_load(tmp_path: Path) -> None:
    package = tmp_path / "nested"
    (package / "tools").mkdir(parents=True)
    deep = "[" * 1000 + "]" * 1000
    (package / "tools" / "deep.json").write_text(
        json.dumps({**_tool("deep"), "annotations": {"x": "PLACEHOLDER"}}).replace(
            '"PLACEHOLDER"', deep
        )
    )
    (package / "tools" / "deeper.json").write_text("{" + '"a":{' * 100_000 + "}" * 100_001)
    (package / "tools" / "fine.json").write_text(json.dumps(_tool("fine")))
    (package / "handlers.py").write_text(
        "def fine(args, ctx):\n    return 'ok'\n\n\ndef deep(args, ctx):\n    return 'no'\n"
    )
    registry = discover([package])
    assert "fine" in registry.tools and "deep" not in registry.tools
    messages = {Path(e.file).name: e.message for e in registry.errors}
    assert "nested more than 64 levels" in messages["deep.json"]
    assert "nested more than 64 levels" in messages["deeper.json"]


def test_a_deeply_nested_manifest_is_an_error_not_a_crash(tmp_path: Path) -> None:
    package = tmp_path / "deepmanifest"
    (package / "tools").mkdir(parents=True)
    (package / "manifest.json").write_text('{"name": "x", "v": ' + "[" * 5000 + "]" * 5000 + "}")
    registry = discover([package])
    assert any("nested more than" in e.message for e in registry.errors)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)
_CONTRACT_KEYS = st.sampled_from(
    ["name", "description", "input_schema", "annotations", "features", "argument_features",
     "path_arguments", "approval", "subagents", "properties", "pointer", "type", "$ref"]
)  # fmt: skip


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.one_of(
        _JSON,
        st.dictionaries(_CONTRACT_KEYS, _JSON, max_size=8),
        st.builds(
            lambda extra: {**_tool("shape"), **extra}, st.dictionaries(_CONTRACT_KEYS, _JSON)
        ),
    )
)
def test_no_json_shape_makes_loading_a_tool_file_crash(tmp_path: Path, shape: object) -> None:
    path = tmp_path / "shape.json"
    path.write_text(json.dumps(shape))
    loaded = load_tool_file(path, package="p")
    assert isinstance(loaded, ToolSpec | LoadError)
    if isinstance(loaded, LoadError):
        assert loaded.message and loaded.file == str(path)
