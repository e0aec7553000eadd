"""fs_read: numbered lines in a window, caps, media, PDFs, binary files, documents."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pydantic_ai.messages import BinaryContent

from corral.packages.drive.text import LINE_CAP, READ_BUDGET
from corral.platform import Platform
from tests.fixtures.packages.demo.handlers import PNG
from tests.packages.drive.conftest import call, recording_model, returned, tool_call
from tests.web.test_extraction_pdf import make_pdf


async def test_a_range_of_lines_comes_back_numbered_with_how_to_read_on(
    platform: Platform, drive: Path
) -> None:
    (drive / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 5001)))
    result = await call(platform, "fs_read", uri="data://long.txt", offset=10, limit=3)
    assert result.status == "ok", result.text
    lines = result.text.splitlines()
    assert lines[0] == "data://long.txt (5,000 lines)"
    assert lines[1:4] == ["    10\tline 10", "    11\tline 11", "    12\tline 12"]
    assert lines[4] == (
        "[showing lines 10-12 of 5,000 (limit was reached); call again with offset=13 to read on]"
    )
    assert result.data is not None
    assert (result.data["first_line"], result.data["last_line"]) == (10, 12)
    assert result.data["complete"] is False


async def test_a_whole_small_file_has_no_marker(platform: Platform, drive: Path) -> None:
    (drive / "notes").mkdir()
    (drive / "notes" / "a.md").write_text("alpha\nbeta")
    result = await call(platform, "fs_read", uri="notes/a.md")  # relative to the drive
    assert result.text == "data://notes/a.md (2 lines)\n     1\talpha\n     2\tbeta"
    assert result.data is not None and result.data["complete"] is True


async def test_the_character_budget_and_long_lines_are_cut_with_a_marker(
    platform: Platform, drive: Path
) -> None:
    (drive / "wide.txt").write_text(("y" * 100 + "\n") * 2000 + "z" * (LINE_CAP + 50) + "\n")
    result = await call(platform, "fs_read", uri="data://wide.txt")
    assert len(result.text) <= READ_BUDGET + 400
    assert result.text.splitlines()[-1].startswith("[showing lines 1-")
    assert "(the character budget was reached); call again with offset=" in result.text
    tail = await call(platform, "fs_read", uri="data://wide.txt", offset=2001)
    assert "[… line cut: 50 more characters]" in tail.text
    assert "1 line(s) longer than 2,000 characters were cut where marked" in tail.text


async def test_offset_past_the_end_says_how_long_the_file_is(
    platform: Platform, drive: Path
) -> None:
    (drive / "short.txt").write_text("one\ntwo\n")
    result = await call(platform, "fs_read", uri="data://short.txt", offset=9)
    assert "offset is past the end; the text has 2 lines" in result.text


async def test_folders_missing_files_and_binary_files_get_clear_answers(
    platform: Platform, drive: Path
) -> None:
    (drive / "sub").mkdir()
    folder = await call(platform, "fs_read", uri="data://sub")
    assert folder.error_code == "is_a_folder" and "fs_list" in folder.text
    missing = await call(platform, "fs_read", uri="data://nope.txt")
    assert missing.error_code == "not_found"
    (drive / "blob.gz").write_bytes(b"\x1f\x8b\x08\x00" + bytes(range(256)) * 4)
    binary = await call(platform, "fs_read", uri="data://blob.gz")
    assert binary.status == "ok"
    assert "binary file" in binary.text and "gzip-compressed data" in binary.text
    assert "\x00" not in binary.text


async def test_a_pdf_reads_as_text_per_page_and_ranges_apply(
    platform: Platform, drive: Path
) -> None:
    (drive / "report.pdf").write_bytes(make_pdf("First page words", "Second page words"))
    result = await call(platform, "fs_read", uri="data://report.pdf")
    assert result.status == "ok", result.text
    assert "[page 1]" in result.text and "First page words" in result.text
    assert "[page 2]" in result.text and "Second page words" in result.text
    assert result.data is not None and result.data["kind"] == "pdf"
    later = await call(platform, "fs_read", uri="data://report.pdf", offset=4)
    assert "First page words" not in later.text and "Second page words" in later.text


async def test_a_pdf_over_its_ceiling_names_the_setting(platform: Platform, drive: Path) -> None:
    await platform.admin.set_live("web_fetch_pdf_max_bytes", 1024)
    (drive / "big.pdf").write_bytes(make_pdf("x" * 50) + b"%" * 2048)
    result = await call(platform, "fs_read", uri="data://big.pdf")
    assert result.error_code == "too_large"
    assert "web_fetch_pdf_max_bytes" in result.text


@pytest.mark.skipif(shutil.which("pdftoppm") is None, reason="poppler-utils is not installed")
async def test_a_pdf_page_is_drawn_as_an_image_kept_inline(platform: Platform, drive: Path) -> None:
    (drive / "report.pdf").write_bytes(make_pdf("First", "Second"))
    result = await call(platform, "fs_read", uri="data://report.pdf", render_page=2)
    assert result.status == "ok", result.text
    assert "page 2 of 2, drawn as image/png" in result.text
    image = result.to_json()["content"][1]
    assert image["type"] == "image" and image["media_type"] == "image/png"
    past = await call(platform, "fs_read", uri="data://report.pdf", render_page=3)
    assert past.error_code == "invalid_arguments" and "has 2 page(s)" in past.text
    not_pdf = await call(platform, "fs_read", uri="data://report.pdf", offset=1)
    assert not_pdf.status == "ok"
    (drive / "a.txt").write_text("a")
    wrong = await call(platform, "fs_read", uri="data://a.txt", render_page=1)
    assert wrong.error_code == "invalid_arguments"


async def test_without_pdftoppm_drawing_a_page_names_the_package(
    platform: Platform, drive: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    (drive / "report.pdf").write_bytes(make_pdf("First"))
    result = await call(platform, "fs_read", uri="data://report.pdf", render_page=1)
    assert result.error_code == "render_unavailable"
    assert "poppler-utils" in result.text


async def test_an_image_reaches_an_image_model_as_pixels_and_a_text_model_as_a_marker(
    platform: Platform, drive: Path
) -> None:
    (drive / "dot.png").write_bytes(PNG)
    read = tool_call("fs_read", uri="data://dot.png")
    eyes = recording_model(
        platform, "test:eyes", [{"tool_calls": [read]}, {"text": "a dot"}], images=True
    )
    turn = await platform.chat("look", model="test:eyes")
    assert turn.status == "finished"
    content = returned(eyes[-1], "fs_read")
    assert content[0].startswith("data://dot.png: image image/png")
    assert isinstance(content[1], BinaryContent)
    assert content[1].data == PNG and content[1].media_type == "image/png"
    stored = next(r for r in turn.rows if r.kind == "tool_result").data["result"]
    assert stored["content"][1]["type"] == "resource"  # a file: stored by reference
    assert stored["content"][1]["uri"] == "data://dot.png"

    blind = recording_model(platform, "test:blind", [{"tool_calls": [read]}, {"text": "ok"}])
    await platform.chat("look", model="test:blind")
    marker = returned(blind[-1], "fs_read")[1]
    assert marker == (
        f"[image image/png, {len(PNG)} bytes: from data://dot.png; this model does not take "
        "image input]"
    )
