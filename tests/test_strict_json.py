"""corral.strict_json: what strict parsing refuses and why, and error bodies that serialise."""

from __future__ import annotations

import json
import math

import pytest

from corral.strict_json import MAX_DEPTH, JsonRefused, json_safe, loads


def test_nesting_is_counted_outside_strings_before_parsing() -> None:
    assert loads(b'{"a": "[[[[' + b"[" * 500 + b'"}') == {"a": "[[[[" + "[" * 500}
    at_limit = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
    assert loads(at_limit) is not None
    with pytest.raises(JsonRefused, match=f"{MAX_DEPTH + 1} levels deep"):
        loads(b"[" + at_limit + b"]")
    with pytest.raises(JsonRefused, match="levels deep"):
        loads(b"[" * 1_000_000)  # no RecursionError, no parse at all


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b"NaN", "NaN, which is no number"),
        (b"[-Infinity]", "-Infinity"),
        (b'{"n": 1e999999}', "too large for a float"),
        (b'"\\udc00"', "lone UTF-16 surrogate"),
        (b'{"\\ud800": 1}', "lone UTF-16 surrogate"),
        (b'"\xc3\x28"', "not valid UTF-8 (byte 1)"),
        (b"9" * 5000, "not accepted JSON"),
        (b'{"a": }', "not JSON: Expecting value at line 1 column 7"),
    ],
)
def test_what_json_loads_takes_is_refused_with_the_reason(raw: bytes, says: str) -> None:
    with pytest.raises(JsonRefused, match=says.replace("(", r"\(").replace(")", r"\)")):
        loads(raw)


def test_surrogate_pairs_and_finite_numbers_pass() -> None:
    assert loads(b'["\\ud83d\\ude00", 1.5e300, -0.0, 12]') == [
        "\N{GRINNING FACE}",
        1.5e300,
        -0.0,
        12,
    ]


def test_json_safe_makes_what_json_cannot_carry_printable() -> None:
    value = {"n": math.nan, "s": "\ud800", "b": b"\xff", "ok": [1, "x"]}
    safe = json_safe(value)
    assert json.loads(json.dumps(safe, allow_nan=False, ensure_ascii=False).encode()) == {
        "n": "nan",
        "s": "\\ud800",
        "b": "b'\\xff'",
        "ok": [1, "x"],
    }
    plain = {"a": [1, 2.5, None, True]}
    assert json_safe(plain) is plain
