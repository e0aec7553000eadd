"""Argument validation for the dispatch pipeline: a fast yes for the common case.

Most tool calls carry valid arguments, and most input schemas use a handful of keywords
(``type``, ``properties``, ``required``, ``additionalProperties``, ``enum``, bounds).
:class:`ArgumentValidator` compiles such a schema once into plain Python checks that answer
"valid" without jsonschema's per-keyword machinery. Any keyword it does not know makes it
fall back to jsonschema's ``is_valid`` for the whole schema, and whenever the quick check
says no, jsonschema itself lists the errors — so jsonschema stays the judge of every
refusal, and the quick check can only ever say yes to what jsonschema would accept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

__all__ = ["ArgumentValidator"]

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset(
    {"description", "title", "default", "examples", "$comment", "deprecated", "$schema"}
)
"""Keywords that never change whether an instance is valid."""


class _Unsupported(Exception):
    """The schema uses a keyword the quick check does not compile."""


class ArgumentValidator:
    """One tool's input schema, compiled once: ``is_valid`` first, errors only on failure."""

    __slots__ = ("_check", "_validator")

    def __init__(self, schema: dict[str, Any]) -> None:
        # A schema that names its draft ($schema, as MCP servers' often do) is judged by it;
        # the quick check knows 2020-12's keywords only (draft 4's boolean bounds differ).
        # jsonschema loads with the first tool called, not with every open.
        from jsonschema import Draft202012Validator
        from jsonschema.validators import validator_for

        draft = validator_for(schema, default=Draft202012Validator)
        self._validator = draft(schema)
        try:
            if draft is not Draft202012Validator:
                raise _Unsupported
            self._check: Check = _compile(schema)
        except _Unsupported:
            self._check = self._validator.is_valid

    @property
    def compiled(self) -> bool:
        """Whether the quick check is compiled Python rather than jsonschema's ``is_valid``."""
        return self._check != self._validator.is_valid

    def errors(self, instance: Any) -> list[ValidationError]:
        """Every error jsonschema finds, sorted by where it is; empty when valid."""
        if self._check(instance):
            return []
        return sorted(self._validator.iter_errors(instance), key=lambda e: list(e.absolute_path))


def _is_integer(value: Any) -> bool:
    # JSON Schema counts 1.0 as an integer and booleans as neither integers nor numbers.
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


_TYPES: dict[str, Check] = {
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "integer": _is_integer,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
}


def _compile(schema: Any) -> Check:
    """Plain checks for ``schema``, or :class:`_Unsupported` for anything beyond them."""
    if schema is True:
        return lambda _: True
    if not isinstance(schema, dict):
        raise _Unsupported
    checks: list[Check] = []
    for keyword, value in schema.items():
        if keyword in _ANNOTATIONS:
            continue
        checks.append(_keyword(keyword, value, schema))
    if not checks:
        return lambda _: True
    if len(checks) == 1:
        return checks[0]
    return _all_of(tuple(checks))


def _all_of(checks: tuple[Check, ...]) -> Check:
    def every(instance: Any) -> bool:
        # A loop, not all(generator): this runs on every call, and a generator costs more.
        for check in checks:
            if not check(instance):
                return False
        return True

    return every


def _keyword(keyword: str, value: Any, schema: dict[str, Any]) -> Check:
    if keyword == "type":
        return _type_check(value)
    if keyword == "properties":
        return _properties_check(value)
    if keyword == "required":
        if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
            raise _Unsupported
        names = frozenset(value)
        return lambda v: not isinstance(v, dict) or v.keys() >= names
    if keyword == "additionalProperties":
        if value is True:
            return lambda _: True
        if "patternProperties" in schema:
            raise _Unsupported
        known = frozenset((schema.get("properties") or {}).keys())
        if value is False:
            return lambda v: not isinstance(v, dict) or known.issuperset(v)
        return _additional_check(known, _compile(value))
    if keyword == "items":
        item = _compile(value)
        return lambda v: not isinstance(v, list) or all(item(x) for x in v)
    if keyword in ("enum", "const"):
        return _enum_check([value] if keyword == "const" else value)
    return _bound_check(keyword, value)


def _type_check(value: Any) -> Check:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(n in _TYPES for n in names):
        raise _Unsupported
    tests = tuple(_TYPES[n] for n in names)
    if len(tests) == 1:
        return tests[0]
    return lambda v: any(test(v) for test in tests)


def _properties_check(value: Any) -> Check:
    if not isinstance(value, dict):
        raise _Unsupported
    compiled = tuple((name, _compile(sub)) for name, sub in value.items())

    def check(instance: Any) -> bool:
        if not isinstance(instance, dict):
            return True
        for name, sub in compiled:
            if name in instance and not sub(instance[name]):
                return False
        return True

    return check


def _additional_check(known: frozenset[str], sub: Check) -> Check:
    """Every property ``properties`` does not name must pass ``sub`` (a map of variables)."""

    def check(instance: Any) -> bool:
        if not isinstance(instance, dict):
            return True
        for name, item in instance.items():
            if name not in known and not sub(item):
                return False
        return True

    return check


def _enum_check(options: Any) -> Check:
    # JSON equality differs from Python's (True == 1, 1 == 1.0 across types), so only
    # plain strings and None are compared here; anything else goes to jsonschema.
    if not isinstance(options, list) or not all(isinstance(o, str) or o is None for o in options):
        raise _Unsupported
    allowed = tuple(options)
    return lambda v: (isinstance(v, str) or v is None) and v in allowed


_BOUNDS: dict[str, tuple[tuple[type, ...], Callable[[Any, Any], bool]]] = {
    "minLength": ((str,), lambda v, n: len(v) >= n),
    "maxLength": ((str,), lambda v, n: len(v) <= n),
    "minItems": ((list,), lambda v, n: len(v) >= n),
    "maxItems": ((list,), lambda v, n: len(v) <= n),
    "minimum": ((int, float), lambda v, n: v >= n),
    "maximum": ((int, float), lambda v, n: v <= n),
    "exclusiveMinimum": ((int, float), lambda v, n: v > n),
    "exclusiveMaximum": ((int, float), lambda v, n: v < n),
}


def _bound_check(keyword: str, bound: Any) -> Check:
    entry = _BOUNDS.get(keyword)
    if entry is None or isinstance(bound, bool) or not isinstance(bound, int | float):
        raise _Unsupported
    kinds, holds = entry

    def check(instance: Any) -> bool:
        if isinstance(instance, bool) or not isinstance(instance, kinds):
            return True
        return holds(instance, bound)

    return check
