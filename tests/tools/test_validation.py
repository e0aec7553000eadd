"""The compiled quick check agrees with jsonschema, which alone words every refusal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import corral.packages.core
from corral.tools.validation import ArgumentValidator

TOOLS = Path(corral.packages.core.__file__).parent / "tools"

SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "object",
        "required": ["text"],
        "properties": {
            "text": {"type": "string", "minLength": 1, "maxLength": 4, "description": "t"},
            "repeat": {"type": "integer", "minimum": 1, "maximum": 3},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "keep": {"enum": ["head", "tail", None]},
            "flag": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
            "either": {"type": ["string", "null"]},
            "fixed": {"const": "x"},
        },
        "additionalProperties": False,
    },
    {
        "type": "object",
        "properties": {"inner": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    },
    {  # a map of names to strings beside named properties: execute's env
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "inner": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 1}},
        },
        "additionalProperties": {"type": ["integer", "null"]},
    },
]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(-5, 5, allow_nan=False)
    | st.sampled_from(["", "x", "head", "tail", "abcde", "12345"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["n", "text", "a"]), inner, max_size=3)
    ),
    max_leaves=6,
)
KEYS = ["text", "repeat", "ratio", "keep", "flag", "tags", "either", "fixed", "inner", "extra"]
instances = st.dictionaries(st.sampled_from(KEYS), json_values, max_size=5)


@pytest.mark.parametrize("schema", SCHEMAS)
def test_common_schemas_are_compiled(schema: dict[str, Any]) -> None:
    assert ArgumentValidator(schema).compiled


@pytest.mark.parametrize("schema", SCHEMAS)
@settings(max_examples=400, deadline=None)
@given(instance=instances)
def test_quick_check_agrees_with_jsonschema(schema: dict[str, Any], instance: Any) -> None:
    errors = ArgumentValidator(schema).errors(instance)
    assert (errors == []) == Draft202012Validator(schema).is_valid(instance)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "string", "pattern": "^x"}}},
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/b"}}, "$defs": {"b": {}}},
        {"type": "object", "properties": {"a": {"enum": [1, True]}}},
        {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}]}}},
    ],
)
def test_unknown_keywords_fall_back_to_jsonschema(schema: dict[str, Any]) -> None:
    validator = ArgumentValidator(schema)
    assert not validator.compiled
    assert validator.errors({"a": "y"}) != [] or Draft202012Validator(schema).is_valid({"a": "y"})


def test_the_execute_schema_is_compiled() -> None:
    """Its ``env`` is a map of strings: left to jsonschema, every call cost 0.15 ms more."""
    schema = json.loads((TOOLS / "execute.json").read_text())
    schema = schema.get("input_schema", schema)
    assert ArgumentValidator(schema).compiled


def test_enum_keeps_json_equality() -> None:
    # True == 1 in Python but not in JSON: such an enum is left to jsonschema.
    validator = ArgumentValidator({"type": "object", "properties": {"a": {"enum": [1]}}})
    assert [e.message for e in validator.errors({"a": True})] == ["True is not one of [1]"]


def test_errors_are_sorted_by_path() -> None:
    validator = ArgumentValidator(SCHEMAS[0])
    errors = validator.errors({"text": 5, "repeat": "x", "zzz": 1})
    assert [list(e.absolute_path) for e in errors] == [[], ["repeat"], ["text"]]
