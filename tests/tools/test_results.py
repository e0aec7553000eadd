"""Result shaping copies only when it changes something."""

from __future__ import annotations

from corral.secrets import Redactor
from corral.tools.results import TextBlock, ToolResult, shape_result


def test_nothing_to_trim_or_redact_returns_the_result_itself() -> None:
    result = ToolResult(content=[TextBlock("short")], data={"k": "v"})
    assert shape_result(result, cap=100, redact=Redactor()) is result


def test_trimming_leaves_the_original_untouched() -> None:
    result = ToolResult(content=[TextBlock("x" * 50)])
    shaped = shape_result(result, cap=10, redact=Redactor())
    assert shaped is not result and "trimmed 40 of 50" in shaped.text
    assert result.text == "x" * 50


def test_redaction_applies_below_the_cap() -> None:
    result = ToolResult(content=[TextBlock("key=supersecret1")], data={"k": "supersecret1"})
    shaped = shape_result(result, cap=100, redact=Redactor(["supersecret1"]))
    assert shaped.text == "key=[redacted]" and shaped.data == {"k": "[redacted]"}
    assert result.text == "key=supersecret1"


def test_a_secret_only_in_data_is_redacted() -> None:
    result = ToolResult(content=[TextBlock("fine")], data={"deep": ["supersecret1"]})
    shaped = shape_result(result, cap=100, redact=Redactor(["supersecret1"]))
    assert shaped is not result and shaped.data == {"deep": ["[redacted]"]}


def test_no_secret_present_returns_the_result_itself() -> None:
    result = ToolResult(content=[TextBlock("fine")], data={"deep": ["plain"]})
    assert shape_result(result, cap=100, redact=Redactor(["supersecret1"])) is result
