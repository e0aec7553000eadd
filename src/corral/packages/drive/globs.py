"""Glob patterns over relative paths, the way fs_list and fs_search (and ripgrep) read them.

A pattern without ``/`` matches a name at any depth (``*.py``); one with ``/`` matches the
whole relative path (``src/**/*.ts``). ``**`` spans folders, ``*`` and ``?`` stay within
one, ``[abc]`` is a class and ``{a,b}`` alternatives; a leading ``!`` keeps what does *not*
match (as ripgrep reads it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from corral.errors import InvalidArguments

__all__ = ["Glob"]


def _translate(pattern: str) -> str:
    out: list[str] = []
    index = 0
    depth = 0
    while index < len(pattern):
        char = pattern[index]
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
            continue
        if pattern.startswith("**", index):
            out.append(".*")
            index += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = pattern.find("]", index + 2)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = pattern[index + 1 : end].replace("\\", "\\\\")
                out.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
                index = end
        elif char == "{":
            out.append("(?:")
            depth += 1
        elif char == "}" and depth:
            out.append(")")
            depth -= 1
        elif char == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(char))
        index += 1
    if depth:
        raise InvalidArguments(f"glob {pattern!r} opens a {{ it never closes; close it")
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Glob:
    pattern: str
    by_name: bool
    regex: re.Pattern[str]
    negated: bool = False

    @classmethod
    def of(cls, pattern: str) -> Glob:
        negated = pattern.startswith("!")
        body = pattern[1:] if negated else pattern
        text = body.strip().lstrip("/") if "/" in body.strip("/") else body.strip("/")
        try:
            regex = re.compile(_translate(text) + r"\Z")
        except re.error as err:
            raise InvalidArguments(f"glob {pattern!r} cannot be used: {err}") from None
        return cls(pattern, "/" not in text, regex, negated)

    def matches(self, relative: str) -> bool:
        """Whether ``relative`` (a path below the folder, ``/``-separated) matches."""
        subject = relative.rsplit("/", 1)[-1] if self.by_name else relative
        return (self.regex.match(subject) is not None) != self.negated
