"""Strict parsing of JSON that arrives from outside, and error bodies that always serialise.

Python's ``json.loads`` takes ``NaN``, ``Infinity`` and ``1e999999`` (as infinity), keeps a
lone ``\\ud800`` escape as a string no UTF-8 encoder can write back, and recurses once per
nesting level (50 000 levels raise ``RecursionError``). :func:`loads` refuses all of these
with :class:`JsonRefused`, saying what was wrong; the nesting is counted before parsing.
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from typing import Any

__all__ = ["MAX_DEPTH", "JsonRefused", "json_safe", "loads"]

MAX_DEPTH = 128
"""Deepest nesting of arrays and objects accepted."""

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
_NOT_BRACKETS = bytes(b for b in range(256) if b not in _BRACKET_STEP)
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


class JsonRefused(ValueError):
    """The text is not strict JSON; the message says what was wrong and what to send."""


def loads(raw: bytes | str) -> Any:
    """``raw`` parsed as strict JSON (UTF-8, finite numbers, nesting up to :data:`MAX_DEPTH`)."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonRefused(
            f"the body is not valid UTF-8 (byte {exc.start}); send JSON encoded as UTF-8"
        ) from None
    depth = _depth(data)
    if depth > MAX_DEPTH:
        raise JsonRefused(
            f"the JSON nests {depth} levels deep; at most {MAX_DEPTH} levels are accepted"
        )
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite)
    except JsonRefused:
        raise
    except json.JSONDecodeError as exc:
        raise JsonRefused(
            f"the body is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except ValueError as exc:  # an integer past Python's digit limit
        raise JsonRefused(f"the body is not accepted JSON: {exc}") from None
    if _SURROGATE_ESCAPE.search(data) and not _encodable(value):
        raise JsonRefused(
            "the JSON holds a lone UTF-16 surrogate escape (such as \\ud800) that is no "
            "character; send text as valid Unicode"
        )
    return value


def json_safe(value: Any) -> Any:
    """``value`` with whatever JSON cannot carry made printable: a non-finite number becomes
    its name as a string, a lone surrogate its ``\\udXXX`` escape, anything else its repr."""
    try:
        json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (ValueError, TypeError, RecursionError):
        return _made_safe(value, MAX_DEPTH)
    return value


def _made_safe(value: Any, depth: int) -> Any:
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if depth <= 0:
        return "…"
    if isinstance(value, dict):
        return {_made_safe(str(k), depth): _made_safe(v, depth - 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_made_safe(v, depth - 1) for v in value]
    return _made_safe(repr(value), depth)


def _depth(data: bytes) -> int:
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_BRACKET_STEP.__getitem__, brackets)), default=0)


def _refuse_constant(name: str) -> Any:
    raise JsonRefused(f"the JSON holds {name}, which is no number; send finite numbers only")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        shown = text if len(text) <= 40 else text[:40] + "…"
        raise JsonRefused(f"the number {shown} is too large for a float; send a smaller number")
    return number


def _encodable(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
