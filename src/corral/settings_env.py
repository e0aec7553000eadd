"""The ``CORRAL_<FIELD>`` environment variables of the start-up settings, read as
pydantic-settings' environment source read them (without importing it, which cost 0.03-0.05 s
of CPU at every start): names match case-insensitively; the value of a field whose type is a
list, dict, set, tuple, model or dataclass is JSON, and must be; a union holding one of those
takes JSON when it decodes and the plain string otherwise; every other field gets the string
as it is (empty and ``None`` included) for pydantic to validate.
"""

from __future__ import annotations

import dataclasses
import json
import os
import types
import typing
from collections import deque
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, get_args, get_origin

from pydantic import BaseModel, Secret

from corral.errors import ConfigError

__all__ = ["environment_values", "merged_over"]

_COMPLEX = (BaseModel, Mapping, Sequence, AbstractSet, tuple, set, frozenset, deque)


def environment_values(model: type[BaseModel], prefix: str) -> dict[str, Any]:
    """The values ``prefix + field`` variables give ``model``'s fields, by field name."""
    found = {name.lower(): (name, value) for name, value in os.environ.items()}
    values: dict[str, Any] = {}
    for field, info in model.model_fields.items():
        hit = found.get(f"{prefix}{field}".lower())
        if hit is None:
            continue
        name, value = hit
        decoded: Any = value
        annotation = _strip_annotated(info.annotation)
        if _is_union(annotation) and any(_is_complex(arg) for arg in get_args(annotation)):
            try:
                decoded = json.loads(value)
            except ValueError:
                pass
        elif _is_complex(annotation):
            try:
                decoded = json.loads(value)
            except ValueError as exc:
                raise ConfigError(
                    f"{name} must be JSON (its setting {field} takes a list or table), "
                    f"and {value!r} is not: {exc}"
                ) from None
        if decoded is not None:  # JSON null leaves the field to the lower sources
            values[field] = decoded
    return values


def merged_over(lower: dict[str, Any], higher: dict[str, Any]) -> dict[str, Any]:
    """``lower`` updated by ``higher``, tables merged key by key as the settings sources do."""
    merged = dict(lower)
    for key, value in higher.items():
        below = merged.get(key)
        if isinstance(below, dict) and isinstance(value, dict):
            merged[key] = merged_over(below, value)
        else:
            merged[key] = value
    return merged


def _strip_annotated(annotation: Any) -> Any:
    while get_origin(annotation) is typing.Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _is_union(annotation: Any) -> bool:
    return get_origin(annotation) in (typing.Union, types.UnionType)


def _is_complex(annotation: Any) -> bool:
    annotation = _strip_annotated(annotation)
    if _is_union(annotation):
        return False  # a union inside a union is flattened by typing; this is only a guard
    origin = get_origin(annotation)
    for candidate in (annotation, origin):
        if not isinstance(candidate, type):
            continue
        if issubclass(candidate, (str, bytes, Secret)):
            return False
        if issubclass(candidate, _COMPLEX) or dataclasses.is_dataclass(candidate):
            return True
    return False
