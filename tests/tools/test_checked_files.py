"""Tool files that passed the JSON Schema checks skip them on the next load, until the file
(or the contract) changes; the record keeps only the files the last load passed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corral.tools import contract
from corral.tools.checked_files import CONTRACT, CheckedFiles
from corral.tools.contract import LoadError, ToolSpec, load_tool_file

SCHEMA_OF = {"type": "object", "properties": {"text": {"type": "string", "description": "Text."}}}


def _write(path: Path, input_schema: dict[str, object]) -> None:
    path.write_text(
        json.dumps(
            {
                "name": path.stem,
                "description": "Echo the text back, for the checked files tests.",
                "input_schema": input_schema,
            }
        )
    )


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files whose input schema the JSON Schema checks looked at, in order."""
    seen: list[str] = []
    real = contract._input_schema_problem

    def counted(schema: object) -> object:
        seen.append(json.dumps(schema, sort_keys=True))
        return real(schema)

    monkeypatch.setattr(contract, "_input_schema_problem", counted)
    return seen


def test_a_file_that_passed_skips_the_checks_on_the_next_load(
    tmp_path: Path, checks: list[str]
) -> None:
    tool, record = tmp_path / "echo.json", tmp_path / "checked.json"
    _write(tool, SCHEMA_OF)
    first = CheckedFiles(record)
    assert isinstance(load_tool_file(tool, checked=first), ToolSpec)
    first.save()
    assert len(checks) == 1
    again = load_tool_file(tool, checked=CheckedFiles(record))
    assert isinstance(again, ToolSpec) and again.input_schema == SCHEMA_OF
    assert len(checks) == 1


def test_a_changed_file_is_checked_again_and_a_broken_one_refused(
    tmp_path: Path, checks: list[str]
) -> None:
    tool, record = tmp_path / "echo.json", tmp_path / "checked.json"
    _write(tool, SCHEMA_OF)
    first = CheckedFiles(record)
    load_tool_file(tool, checked=first)
    first.save()
    broken = {"type": "object", "properties": {"text": {"type": 5, "description": "Text."}}}
    _write(tool, broken)
    second = CheckedFiles(record)
    loaded = load_tool_file(tool, checked=second)
    assert isinstance(loaded, LoadError)
    assert loaded.pointer == "/input_schema/properties/text/type"
    second.save()
    assert len(checks) == 2
    # A failure is never recorded: the broken file is checked (and refused) each time.
    assert isinstance(load_tool_file(tool, checked=CheckedFiles(record)), LoadError)
    assert len(checks) == 3


def test_the_record_keeps_only_the_files_the_last_load_passed(tmp_path: Path) -> None:
    tool, record = tmp_path / "echo.json", tmp_path / "checked.json"
    _write(tool, SCHEMA_OF)
    first = CheckedFiles(record)
    load_tool_file(tool, checked=first)
    first.save()
    old = json.loads(record.read_text())["files"]
    _write(tool, {**SCHEMA_OF, "required": ["text"]})
    second = CheckedFiles(record)
    load_tool_file(tool, checked=second)
    second.save()
    new = json.loads(record.read_text())["files"]
    assert len(old) == len(new) == 1 and old != new
    assert new == [CheckedFiles.fingerprint(tool.read_bytes())]


@pytest.mark.parametrize(
    "recorded",
    ['{"contract": "tool-contract-0", "files": ["FINGERPRINT"]}', "not json", '{"files": 3}'],
)
def test_a_record_of_another_contract_or_unreadable_is_ignored(
    tmp_path: Path, checks: list[str], recorded: str
) -> None:
    tool, record = tmp_path / "echo.json", tmp_path / "checked.json"
    _write(tool, SCHEMA_OF)
    record.write_text(recorded.replace("FINGERPRINT", CheckedFiles.fingerprint(tool.read_bytes())))
    checked = CheckedFiles(record)
    assert isinstance(load_tool_file(tool, checked=checked), ToolSpec)
    assert len(checks) == 1
    checked.save()
    assert json.loads(record.read_text())["contract"] == CONTRACT


def _recorded(data_dir: Path, tool_file: str) -> bool:
    from corral.kernel.kernel import CHECKED_TOOL_FILES

    recorded = json.loads((data_dir / "private" / CHECKED_TOOL_FILES).read_text())
    return CheckedFiles.fingerprint(Path(tool_file).read_bytes()) in recorded["files"]


async def test_opening_the_platform_records_the_built_in_tool_files(data_dir: Path) -> None:
    import corral

    async with corral.open(data_dir) as platform:
        execute = platform.registry.tools["execute"].spec.file
    assert _recorded(data_dir, execute)
