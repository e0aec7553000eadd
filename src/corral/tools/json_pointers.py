"""Reading and removing values at JSON pointers split into parts (``/a/0/b`` → ``a 0 b``)."""

from __future__ import annotations

from typing import Any

__all__ = ["delete_pointer", "get_pointer", "has_pointer", "pointer_parts"]


def pointer_parts(pointer: str) -> list[str]:
    return pointer.strip("/").split("/")


def get_pointer(document: Any, parts: list[str]) -> Any:
    """The value at ``parts``, or None when the path does not exist."""
    for part in parts:
        if isinstance(document, dict) and part in document:
            document = document[part]
        elif isinstance(document, list) and part.isdigit() and int(part) < len(document):
            document = document[int(part)]
        else:
            return None
    return document


def has_pointer(document: Any, parts: list[str]) -> bool:
    """Whether an object member exists at ``parts`` (a null value counts)."""
    parent = get_pointer(document, parts[:-1])
    return isinstance(parent, dict) and parts[-1] in parent


def delete_pointer(document: Any, parts: list[str]) -> None:
    parent = get_pointer(document, parts[:-1])
    if isinstance(parent, dict):
        parent.pop(parts[-1], None)
