"""The escaped form of a word: one string that remembers quoting and unknown parts.

A resolved word is kept as a string in which

* a character written inside quotes (or after a backslash) is preceded by ``\\`` when it
  would otherwise be special to brace expansion, tilde expansion or globbing;
* an unquoted ``*``, ``?``, ``[``, ``{``, ``,`` or a leading ``~`` stands for itself, as the
  shell would treat it;
* :data:`MARK` stands for text that is not statically known (a variable, a command
  substitution) and may be empty; :data:`MARK_NONEMPTY` for unknown text that cannot be
  empty (``${x:?}``, ``${#x}``).

Both marks are Unicode noncharacters, which the control-character rule refuses in any
input, so they cannot collide with user text.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = [
    "MARK",
    "MARK_NONEMPTY",
    "brace_expand",
    "has_unknown",
    "is_glob",
    "literal_chars",
    "literal_prefix",
    "quote",
    "to_pyglob",
    "to_regex",
    "unescape",
    "unknown_as_empty",
]

MARK = "\uffff"
MARK_NONEMPTY = "\ufffe"
_MARKS = (MARK, MARK_NONEMPTY)
_SPECIAL = frozenset("\\*?[]{},~" + MARK + MARK_NONEMPTY)
_SPECIAL_RE = re.compile("[" + re.escape("".join(sorted(_SPECIAL))) + "]")
_DROPPED = str.maketrans("", "", "*?[]" + MARK + MARK_NONEMPTY)
_STOPS = re.compile("[" + re.escape("*?[" + MARK + MARK_NONEMPTY) + "]")


def quote(text: str) -> str:
    """Escaped form of text that was quoted (inert to globbing, braces and tilde)."""
    if not _SPECIAL_RE.search(text):
        return text
    return _SPECIAL_RE.sub(lambda m: "\\" + m.group(0), text)


def unescape(e: str) -> str | None:
    """The literal value, or ``None`` when an unknown part is present."""
    if "\\" not in e:
        return None if (MARK in e or MARK_NONEMPTY in e) else e
    out: list[str] = []
    i, n = 0, len(e)
    while i < n:
        c = e[i]
        if c == "\\" and i + 1 < n:
            out.append(e[i + 1])
            i += 2
            continue
        if c in _MARKS:
            return None
        out.append(c)
        i += 1
    return "".join(out)


def has_unknown(e: str) -> bool:
    """True when the word holds a part that is not statically known."""
    return unescape(e) is None


def literal_chars(e: str) -> str:
    """The characters that are certain to appear (marks and glob operators dropped)."""
    if "\\" not in e:
        return e.translate(_DROPPED)
    out: list[str] = []
    i, n = 0, len(e)
    while i < n:
        c = e[i]
        if c == "\\" and i + 1 < n:
            out.append(e[i + 1])
            i += 2
            continue
        if c not in _MARKS and c not in "*?[]":
            out.append(c)
        i += 1
    return "".join(out)


def literal_prefix(e: str) -> str:
    """The text every path matching :func:`to_regex` of ``e`` starts with (up to the first
    glob operator or unknown part)."""
    if "\\" not in e:
        for stop in _STOPS.finditer(e):
            i = stop.start()
            if e[i] != "[" or _bracket_end(e, i) != -1:
                return e[:i]
        return e
    out: list[str] = []
    i, n = 0, len(e)
    while i < n:
        c = e[i]
        if c == "\\" and i + 1 < n:
            out.append(e[i + 1])
            i += 2
            continue
        if c in _MARKS or c == "*" or c == "?" or (c == "[" and _bracket_end(e, i) != -1):
            break
        out.append(c)
        i += 1
    return "".join(out)


def unknown_as_empty(e: str) -> str:
    """``e`` with every possibly-empty unknown part removed (what ``rm -rf "$X/"`` becomes)."""
    out: list[str] = []
    i, n = 0, len(e)
    while i < n:
        c = e[i]
        if c == "\\" and i + 1 < n:
            out.append(e[i : i + 2])
            i += 2
            continue
        if c != MARK:
            out.append(c)
        i += 1
    return "".join(out)


def _bracket_end(e: str, start: int) -> int:
    """Index of the ``]`` closing the bracket expression opened at ``start``, or -1."""
    i = start + 1
    n = len(e)
    if i < n and e[i] in "!^":
        i += 1
    if i < n and e[i] == "]":
        i += 1
    while i < n:
        c = e[i]
        if c == "\\":
            i += 2
            continue
        if c == "[" and i + 1 < n and e[i + 1] == ":":
            close = e.find(":]", i + 2)
            if close != -1:
                i = close + 2
                continue
        if c == "]":
            return i
        i += 1
    return -1


def is_glob(e: str) -> bool:
    """True when the word has unquoted glob operators bash would expand."""
    if "*" not in e and "?" not in e and "[" not in e:
        return False
    i, n = 0, len(e)
    while i < n:
        c = e[i]
        if c == "\\":
            i += 2
            continue
        if c in "*?":
            return True
        if c == "[" and _bracket_end(e, i) != -1:
            return True
        i += 1
    return False


_POSIX_CLASSES = {
    "alpha": "a-zA-Z",
    "digit": "0-9",
    "alnum": "a-zA-Z0-9",
    "upper": "A-Z",
    "lower": "a-z",
    "space": r"\s",
    "blank": r" \t",
    "xdigit": "0-9A-Fa-f",
    "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
    "word": r"\w",
}


def _bracket_regex(body: str) -> str:
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    out: list[str] = []
    last: str | None = None
    """The character the last item of ``out`` stands for (None after a class)."""
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c == "[" and body.startswith("[:", i):
            close = body.find(":]", i + 2)
            if close != -1:
                out.append(_POSIX_CLASSES.get(body[i + 2 : close], r"\S"))
                last = None
                i = close + 2
                continue
        if c == "-" and 0 < i < n - 1 and last is not None:
            escaped = body[i + 1] == "\\" and i + 2 < n
            upper = body[i + 2] if escaped else body[i + 1]
            if upper < last:  # bash (globasciiranges) matches nothing for a reversed range
                out.pop()
                last = None
                i += 3 if escaped else 2
                continue
            out.append("-")
            last = None
            i += 1
            continue
        if c == "\\" and i + 1 < n:
            out.append(re.escape(body[i + 1]))
            last = body[i + 1]
            i += 2
            continue
        out.append(re.escape(c))
        last = c
        i += 1
    if not out:
        return "[^/]" if negate else "(?!)"
    cls = ("[^/" if negate else "[") + "".join(out) + "]"
    try:
        re.compile(cls)
    except re.error:  # a class Python cannot express: assume it may match any one character
        return "[^/]"
    return cls


@lru_cache(maxsize=4096)
def to_regex(e: str) -> re.Pattern[str]:
    """A regex matching every path the word could become (unknown parts match anything).

    Glob operators follow bash defaults: they never match ``/`` and never match a leading
    ``.`` of a path component (no ``dotglob``).
    """
    parts: list[str] = []
    i, n = 0, len(e)
    start = True
    while i < n:
        c = e[i]
        if c == "\\" and i + 1 < n:
            parts.append(re.escape(e[i + 1]))
            i += 2
            start = e[i - 1] == "/"
            continue
        if c in _MARKS:
            parts.append(".*")
        elif c == "*":
            parts.append(r"(?!\.)[^/]*" if start else "[^/]*")
        elif c == "?":
            parts.append(r"(?!\.)[^/]" if start else "[^/]")
        elif c == "[" and (end := _bracket_end(e, i)) != -1:
            cls = _bracket_regex(e[i + 1 : end])
            parts.append(r"(?!\.)" + cls if start else cls)
            i = end + 1
            start = False
            continue
        else:
            parts.append(re.escape(c))
        start = c == "/"
        i += 1
    return re.compile("".join(parts), re.DOTALL)


def to_pyglob(e: str) -> str | None:
    """The word as a :mod:`glob` pattern (quoted metacharacters bracketed), or ``None``."""
    out: list[str] = []
    i, n = 0, len(e)
    while i < n:
        c = e[i]
        if c == "\\" and i + 1 < n:
            lit = e[i + 1]
            out.append(f"[{lit}]" if lit in "*?[" else lit)
            i += 2
            continue
        if c in _MARKS:
            return None
        out.append(c)
        i += 1
    return "".join(out)


# ---- brace expansion -------------------------------------------------------------------

_SEQ = re.compile(r"^(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?$")


class BraceOverflow(Exception):
    """A brace expansion would produce more words than the analyser accepts."""


def _find_brace(e: str) -> tuple[int, int, list[str]] | None:
    """The first expandable ``{…}``: its bounds and alternatives (escaped form)."""
    n = len(e)
    i = 0
    while i < n:
        c = e[i]
        if c == "\\":
            i += 2
            continue
        if c == "{" and not (i > 0 and e[i - 1] == "$"):
            depth = 0
            commas: list[int] = []
            j = i
            while j < n:
                d = e[j]
                if d == "\\":
                    j += 2
                    continue
                if d == "{":
                    depth += 1
                elif d == "}":
                    depth -= 1
                    if depth == 0:
                        break
                elif d == "," and depth == 1:
                    commas.append(j)
                j += 1
            if j < n:
                body = e[i + 1 : j]
                if commas:
                    cuts = [i, *commas, j]
                    return i, j, [e[cuts[k] + 1 : cuts[k + 1]] for k in range(len(cuts) - 1)]
                seq = _sequence(body)
                if seq is not None:
                    return i, j, seq
        i += 1
    return None


def _sequence(body: str) -> list[str] | None:
    match = _SEQ.match(body)
    if not match:
        return None
    first, last, step_text = match.groups()
    step = abs(int(step_text)) if step_text else 1
    step = step or 1
    if first.lstrip("-").isdigit() and last.lstrip("-").isdigit():
        a, b = int(first), int(last)
        if abs(b - a) // step > 4096:
            raise BraceOverflow
        width = max(len(first), len(last)) if first.lstrip("-").startswith("0") else 0
        rng = range(a, b + 1, step) if a <= b else range(a, b - 1, -step)
        return [str(v).zfill(width) if width else str(v) for v in rng]
    if first.isalpha() and last.isalpha() and len(first) == len(last) == 1:
        a, b = ord(first), ord(last)
        rng = range(a, b + 1, step) if a <= b else range(a, b - 1, -step)
        return [chr(v) for v in rng]
    return None


def brace_expand(e: str, limit: int = 256) -> list[str]:
    """Bash brace expansion of an escaped word; raises :class:`BraceOverflow` past ``limit``."""
    if "{" not in e:
        return [e]
    out: list[str] = []
    pending = [e]
    while pending:
        current = pending.pop()
        found = _find_brace(current)
        if found is None:
            out.append(current)
            if len(out) > limit:
                raise BraceOverflow
            continue
        start, end, alternatives = found
        pre, post = current[:start], current[end + 1 :]
        pending.extend(pre + alt + post for alt in reversed(alternatives))
        if len(pending) > limit * 4:
            raise BraceOverflow
    return out
