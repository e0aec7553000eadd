"""Secret arguments: values a tool takes that no row, card or approval may keep.

A tool file declares them as JSON pointers in ``secret_arguments``; a ``*`` segment stands for
every item of an array (or every key of an object), e.g. ``/add/*/secret``. Before the runtime
writes a tool call to the timeline, and before a parked call is stored for approval, the
values are replaced by :data:`REDACTED`; the handler still gets them: a live call from the
arguments the model sent, an approved call from the approval's sealed (encrypted) part.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["REDACTED", "join_secrets", "split_secrets", "storable"]

REDACTED = "[secret: not stored]"


def _matches(document: Any, parts: Sequence[str], at: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    if not parts:
        yield at
        return
    head, rest = parts[0], parts[1:]
    if isinstance(document, list):
        indexes = range(len(document)) if head == "*" else [int(head)] if head.isdigit() else []
        for index in indexes:
            if index < len(document):
                yield from _matches(document[index], rest, (*at, str(index)))
    elif isinstance(document, dict):
        keys = list(document) if head == "*" else [head] if head in document else []
        for key in keys:
            yield from _matches(document[key], rest, (*at, key))


def _step(document: Any, part: str) -> Any:
    return document[int(part)] if isinstance(document, list) else document[part]


def split_secrets(
    arguments: dict[str, Any], pointers: Sequence[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``arguments`` with every secret replaced by :data:`REDACTED`, and the secrets by their
    concrete JSON pointer (``/add/0/secret``). Without secrets: the same dict and ``{}``."""
    found = [
        path
        for pointer in pointers
        for path in _matches(arguments, pointer.strip("/").split("/"), ())
    ]
    if not found:
        return arguments, {}
    redacted = copy.deepcopy(arguments)
    secrets: dict[str, Any] = {}
    for path in found:
        parent = redacted
        for part in path[:-1]:
            parent = _step(parent, part)
        last = int(path[-1]) if isinstance(parent, list) else path[-1]
        secrets["/" + "/".join(path)] = parent[last]
        parent[last] = REDACTED
    return redacted, secrets


def join_secrets(arguments: dict[str, Any], secrets: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` with the secrets :func:`split_secrets` took out put back."""
    if not secrets:
        return arguments
    joined = copy.deepcopy(arguments)
    for pointer, value in secrets.items():
        path = pointer.strip("/").split("/")
        parent = joined
        for part in path[:-1]:
            parent = _step(parent, part)
        parent[int(path[-1]) if isinstance(parent, list) else path[-1]] = value
    return joined


def storable(pointers: Sequence[str], arguments: Any) -> Any:
    """``arguments`` as a row or card may keep them: secrets replaced, anything else as is."""
    if not pointers or not isinstance(arguments, dict):
        return arguments
    return split_secrets(arguments, pointers)[0]
