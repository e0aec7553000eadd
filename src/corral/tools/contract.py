"""The tool contract: one ``tools/<name>.json`` file per tool, checked at load time.

A tool file holds:

- ``name`` — lower snake case, equal to the file's stem and unique across packages;
- ``description`` — operating instructions for the model (when to pick it, how to recover,
  safety bounds);
- ``input_schema`` — a JSON Schema (Draft 2020-12) object schema whose every property is
  described;
- ``annotations`` — ``readOnlyHint``, ``destructiveHint``, ``idempotentHint``,
  ``openWorldHint`` as MCP names them;
- ``features`` — feature ids the caller must hold;
- ``argument_features`` — feature ids that individual arguments need, and whether a call
  without them is refused or goes ahead without the argument;
- ``approval`` — ``annotations`` (default: the permission profile decides from the
  annotations), ``always`` or ``never``;
- ``path_arguments`` — arguments naming paths or URIs, with the access the call needs;
- ``secret_arguments`` — JSON pointers (``*`` for every array item) of values no row, card
  or approval may keep (see :mod:`corral.tools.secret_arguments`);
- ``subagents`` — false for tools that must never reach a subagent;
- ``blocking`` — false declares a sync handler that never blocks (no I/O, no long work), so
  dispatch calls it inline instead of in a worker thread; async handlers ignore it.

A file that breaks any rule yields a :class:`LoadError` naming the file and the JSON pointer.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from corral.policy.grants import validate_feature_pattern
from corral.policy.profiles import ApprovalMode
from corral.policy.sources import Access
from corral.tools.checked_files import CheckedFiles

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = [
    "MAX_NESTING",
    "META_SCHEMA",
    "Annotations",
    "ArgumentFeature",
    "LoadError",
    "PathArgument",
    "ToolSpec",
    "load_tool_file",
    "nesting_depth",
    "parse_tool",
    "pointer",
    "read_json_file",
    "undescribed_properties",
]

_NAME = "^[a-z][a-z0-9_]{0,63}$"

META_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["name", "description", "input_schema"],
    "additionalProperties": False,
    "properties": {
        "$schema": {"type": "string"},
        "name": {"type": "string", "pattern": _NAME},
        "title": {"type": "string"},
        "description": {"type": "string", "minLength": 20},
        "input_schema": {
            "type": "object",
            "required": ["type"],
            "properties": {
                "type": {"const": "object"},
                "properties": {"type": "object"},
            },
        },
        "annotations": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "title": {"type": "string"},
                "readOnlyHint": {"type": "boolean"},
                "destructiveHint": {"type": "boolean"},
                "idempotentHint": {"type": "boolean"},
                "openWorldHint": {"type": "boolean"},
            },
        },
        "features": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "argument_features": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["pointer", "features"],
                "additionalProperties": False,
                "properties": {
                    "pointer": {"type": "string", "pattern": "^(/[^/]+)+$"},
                    "features": {
                        "type": "array",
                        "items": {"type": "string"},
                        "minItems": 1,
                    },
                    "when_missing": {"enum": ["refuse", "drop"]},
                    "note": {"type": "string"},
                },
            },
        },
        "approval": {"enum": ["annotations", "always", "never"]},
        "path_arguments": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["pointer", "access"],
                "additionalProperties": False,
                "properties": {
                    "pointer": {"type": "string", "pattern": "^(/[^/]+)+$"},
                    "access": {"enum": ["read", "write", "exec"]},
                },
            },
        },
        "secret_arguments": {
            "type": "array",
            "items": {"type": "string", "pattern": "^(/[^/]+)+$"},
        },
        "subagents": {"type": "boolean"},
        "blocking": {"type": "boolean"},
    },
}


@functools.cache
def _meta_validator() -> Validator:
    # jsonschema loads with the first tool file not checked before (see CheckedFiles).
    from jsonschema import Draft202012Validator

    return Draft202012Validator(META_SCHEMA)


def _contract_problem(raw: Any) -> tuple[list[str | int], str] | None:
    """Where and why ``raw`` breaks the contract's meta-schema (None: it does not)."""
    errors = sorted(_meta_validator().iter_errors(raw), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    first = errors[0]
    return list(first.absolute_path), f"does not follow the tool contract: {first.message}"


def _input_schema_problem(schema: Any) -> tuple[list[str | int], str] | None:
    """Where and why ``schema`` is not valid JSON Schema (None: it is)."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    try:
        # The draft a schema names ($schema) is the one it is checked by; 2020-12 otherwise.
        validator_for(schema, default=Draft202012Validator).check_schema(schema)
    except SchemaError as exc:
        return (
            ["input_schema", *exc.absolute_path],
            f"input_schema is not a valid JSON Schema: {exc.message}",
        )
    return None


def pointer(parts: Any) -> str:
    """A JSON pointer (RFC 6901) for a path of keys and indexes."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


@dataclass(frozen=True, slots=True)
class LoadError:
    """Why a tool or package was left out: the file, the JSON pointer, and what to fix."""

    file: str
    pointer: str
    message: str
    package: str | None = None

    def __str__(self) -> str:
        where = f"{self.file}#{self.pointer}" if self.pointer else self.file
        return f"{where}: {self.message}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Annotations:
    title: str | None = None
    read_only: bool = False
    destructive: bool = True
    idempotent: bool = False
    open_world: bool = True

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Annotations:
        read_only = bool(raw.get("readOnlyHint", False))
        return cls(
            title=raw.get("title"),
            read_only=read_only,
            # MCP: destructiveHint only means something when the tool is not read-only.
            destructive=False if read_only else bool(raw.get("destructiveHint", True)),
            idempotent=bool(raw.get("idempotentHint", False)),
            open_world=bool(raw.get("openWorldHint", True)),
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": self.open_world,
        }
        if self.title:
            data["title"] = self.title
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class ArgumentFeature:
    pointer: str
    features: tuple[str, ...]
    when_missing: Literal["refuse", "drop"] = "refuse"
    note: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PathArgument:
    pointer: str
    access: Access


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec:
    """A validated tool declaration."""

    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: Annotations
    features: tuple[str, ...]
    argument_features: tuple[ArgumentFeature, ...]
    approval: ApprovalMode
    path_arguments: tuple[PathArgument, ...]
    subagents: bool
    file: str
    raw: dict[str, Any]
    blocking: bool = True
    """False: the sync handler runs inline on the event loop (see the module docstring)."""
    secret_arguments: tuple[str, ...] = ()
    """JSON pointers of arguments kept out of every row, card and approval."""

    def model_schema(self) -> dict[str, Any]:
        """What the model sees: name, description and the full input schema."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }


def _undescribed(schema: Any, at: list[str | int]) -> list[str]:
    """Pointers of properties without a description, walking nested object schemas."""
    found: list[str] = []
    if not isinstance(schema, dict):
        return found
    for name, prop in (schema.get("properties") or {}).items():
        here = [*at, "properties", name]
        if not isinstance(prop, dict) or not str(prop.get("description", "")).strip():
            found.append(pointer([*here, "description"]))
        found.extend(_undescribed(prop, here))
    items = schema.get("items")
    if isinstance(items, dict):
        found.extend(_undescribed(items, [*at, "items"]))
    for key in ("$defs", "definitions"):
        for name, sub in (schema.get(key) or {}).items():
            found.extend(_undescribed(sub, [*at, key, name]))
    for key in ("anyOf", "oneOf", "allOf"):
        for index, sub in enumerate(schema.get(key) or []):
            found.extend(_undescribed(sub, [*at, key, index]))
    return found


def undescribed_properties(schema: Any) -> list[str]:
    """JSON pointers (within ``schema``) of the properties that have no description."""
    return [at.removesuffix("/description") for at in _undescribed(schema, [])]


def _cannot_validate(schema: dict[str, Any]) -> str:
    """Why arguments could not be checked against ``schema`` (a ``$ref`` that resolves
    nowhere, a pattern Python cannot compile...), or ``""`` when they can."""
    from jsonschema import Draft202012Validator
    from jsonschema.validators import validator_for

    every_property = {name: None for name in schema.get("properties") or {}}
    try:
        validator = validator_for(schema, default=Draft202012Validator)(schema)
        for probe in ({}, every_property):
            for _ in validator.iter_errors(probe):
                pass
    except Exception as exc:  # whatever jsonschema or referencing raise: the schema is unusable
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    return ""


MAX_NESTING = 64
"""Deepest nesting of arrays and objects a tool file may have (real ones use under 10)."""


def nesting_depth(value: Any, limit: int = MAX_NESTING) -> int:
    """How deeply ``value`` nests lists and dicts, counted without recursion (stops at
    ``limit + 1``)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, dict | list):
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children)
    return deepest


def read_json_file(path: Path) -> tuple[Any, str | None]:
    """A JSON file's value, or ``(None, why)`` when it cannot be read, is not UTF-8, not
    JSON, or nested past :data:`MAX_NESTING`."""
    try:
        content = path.read_bytes()
    except OSError as exc:
        return None, f"cannot be read: {exc.strerror or exc}"
    return json_value(content)


def json_value(content: bytes) -> tuple[Any, str | None]:
    """The value of a JSON file's bytes, or ``(None, why)`` as :func:`read_json_file`."""
    try:
        raw = json.loads(content.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "the file is not UTF-8 text"
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    except RecursionError:
        return None, f"nested more than {MAX_NESTING} levels deep; flatten it"
    if nesting_depth(raw) > MAX_NESTING:
        return None, f"nested more than {MAX_NESTING} levels deep; flatten it"
    return raw, None


def load_tool_file(
    path: Path, *, package: str | None = None, checked: CheckedFiles | None = None
) -> ToolSpec | LoadError:
    """Read and validate one tool file; whatever is wrong with it comes back as an error.

    ``checked``: files that passed the JSON Schema checks before skip them; a file that
    passes them now is added."""
    try:
        return _load_tool_file(path, package, checked or CheckedFiles())
    except (RecursionError, ValueError, TypeError, KeyError, AttributeError) as exc:
        # A shape the checks above did not foresee: leave the file out, never crash discovery.
        message = f"could not be loaded ({type(exc).__name__}: {str(exc)[:200]})"
        return LoadError(file=str(path), pointer="", message=message, package=package)


def _load_tool_file(path: Path, package: str | None, checked: CheckedFiles) -> ToolSpec | LoadError:
    file = str(path)
    try:
        content = path.read_bytes()
    except OSError as exc:
        return LoadError(file, "", f"cannot be read: {exc.strerror or exc}", package)
    raw, problem = json_value(content)
    if problem is not None:
        return LoadError(file, "", problem, package)
    fingerprint = checked.fingerprint(content)
    passed = checked.passed(fingerprint)
    loaded = parse_tool(raw, file=file, package=package, file_name=path.stem, checked=passed)
    if not passed and isinstance(loaded, ToolSpec):
        checked.add(fingerprint)
    return loaded


def parse_tool(
    raw: Any,
    *,
    file: str,
    package: str | None = None,
    file_name: str | None = None,
    external: bool = False,
    checked: bool = False,
) -> ToolSpec | LoadError:
    """Validate one tool declaration already read (a tool file's JSON, or a declaration
    generated from an MCP server's tool list); ``file`` names where it came from.

    ``external``: the input schema is someone else's (an MCP server's), taken as they give
    it: undescribed properties are allowed (see :func:`undescribed_properties` for the
    warning), and only a schema that is not valid JSON Schema or cannot be validated
    against is refused.

    ``checked``: ``raw`` is, byte for byte, a file that passed the JSON Schema checks
    before (see :class:`~corral.tools.checked_files.CheckedFiles`); they are skipped."""

    def error(at: str, message: str) -> LoadError:
        return LoadError(file=file, pointer=at, message=message, package=package)

    problem = None if checked else _contract_problem(raw)
    if problem is not None:
        return error(pointer(problem[0]), problem[1])
    if file_name is not None and raw["name"] != file_name:
        return error("/name", f"name {raw['name']!r} must equal the file name {file_name!r}")
    schema = raw["input_schema"]
    problem = None if checked else _input_schema_problem(schema)
    if problem is not None:
        return error(pointer(problem[0]), problem[1])
    if external:
        unusable = _cannot_validate(schema)
        if unusable:
            return error("/input_schema", f"input_schema cannot be validated against: {unusable}")
    else:
        missing = _undescribed(schema, ["input_schema"])
        if missing:
            return error(missing[0], "every input property needs a description for the model")
    feature_lists = [(["features"], raw.get("features", []))] + [
        (["argument_features", i, "features"], item["features"])
        for i, item in enumerate(raw.get("argument_features", []))
    ]
    for at, features in feature_lists:
        for index, feature in enumerate(features):
            try:
                validate_feature_pattern(feature)
            except ValueError as exc:
                return error(pointer([*at, index]), str(exc))
    declared = set((schema.get("properties") or {}).keys())
    for index, item in enumerate(raw.get("argument_features", [])):
        top = item["pointer"].split("/")[1]
        if top not in declared:
            return error(
                pointer(["argument_features", index, "pointer"]),
                f"argument {top!r} is not a property of input_schema",
            )
    for index, item in enumerate(raw.get("path_arguments", [])):
        top = item["pointer"].split("/")[1]
        if top not in declared:
            return error(
                pointer(["path_arguments", index, "pointer"]),
                f"argument {top!r} is not a property of input_schema",
            )
    for index, item in enumerate(raw.get("secret_arguments", [])):
        top = item.split("/")[1]
        if top not in declared:
            return error(
                pointer(["secret_arguments", index]),
                f"argument {top!r} is not a property of input_schema",
            )
    return ToolSpec(
        name=raw["name"],
        description=raw["description"],
        input_schema=schema,
        annotations=Annotations.from_json(raw.get("annotations", {})),
        features=tuple(raw.get("features", [])),
        argument_features=tuple(
            ArgumentFeature(
                pointer=item["pointer"],
                features=tuple(item["features"]),
                when_missing=item.get("when_missing", "refuse"),
                note=item.get("note"),
            )
            for item in raw.get("argument_features", [])
        ),
        approval=cast(ApprovalMode, raw.get("approval", "annotations")),
        path_arguments=tuple(
            PathArgument(pointer=item["pointer"], access=item["access"])
            for item in raw.get("path_arguments", [])
        ),
        subagents=bool(raw.get("subagents", True)),
        blocking=bool(raw.get("blocking", True)),
        secret_arguments=tuple(raw.get("secret_arguments", [])),
        file=file,
        raw=raw,
    )
