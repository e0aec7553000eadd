"""Resolving tree-sitter word nodes the way bash would, into the escaped form.

Quote removal, backslash escapes, ANSI-C ``$'…'`` decoding, concatenation and tilde
expansion are done here; what cannot be known statically (variables, command output)
becomes an unknown mark. Command and process substitutions met on the way are handed to
the walker so the commands inside are analysed too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from corral.shell.analysis._escaped import MARK, MARK_NONEMPTY, is_glob, quote, unescape
from corral.shell.analysis._parser import Node
from corral.shell.analysis._types import Word

__all__ = [
    "ResolvedWord",
    "Sink",
    "WordResolver",
    "decode_ansi_c",
    "expand_tilde",
    "public_word",
    "unquoted",
]


class Sink(Protocol):
    """What the resolver reports to the walker while it resolves a word."""

    def substitution(self, node: Node) -> None:
        """A command or process substitution whose commands must be walked."""

    def prompt_expansion(self, node: Node) -> None:
        """A ``${x@P}`` expansion (it evaluates command substitutions in ``x``)."""

    def param_assignment(self, name: str, node: Node) -> None:
        """A ``${name=…}``/``${name:=…}`` expansion, which assigns ``name``."""

    def opaque_text(self, text: str, node: Node) -> None:
        """Text tree-sitter did not parse (a pattern in ``${x#…}``) that bash expands."""


class _Unset:
    """The type of :data:`_UNSET`."""


_UNSET = _Unset()


@dataclass(slots=True)
class ResolvedWord:
    """A resolved word: as written, and in escaped form."""

    text: str
    escaped: str
    procsub: bool = False
    split: bool = False
    """An unquoted unknown part: bash may split it into several words, or none."""
    _value: str | _Unset | None = field(default=_UNSET, init=False, repr=False, compare=False)

    @property
    def value(self) -> str | None:
        """The literal value (``None`` when a part is unknown), worked out once: the
        checks ask for it many times and :attr:`escaped` never changes."""
        value = self._value
        if isinstance(value, _Unset):
            value = self._value = unescape(self.escaped)
        return value


def public_word(word: ResolvedWord) -> Word:
    """The frozen public form of an internal word."""
    return Word(text=word.text, value=word.value, glob=is_glob(word.escaped))


_SIMPLE_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
_HEX = "0123456789abcdefABCDEF"


def decode_ansi_c(body: str) -> str:
    """Decode the inside of ``$'…'`` as bash does; a NUL ends the string."""
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        c = body[i + 1]
        i += 2
        if c in _SIMPLE_ESCAPES:
            char = _SIMPLE_ESCAPES[c]
        elif c in "01234567":
            j = i
            while j < n and j < i + 2 and body[j] in "01234567":
                j += 1
            char = chr(int(c + body[i:j], 8) & 0xFF)
            i = j
        elif c in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[c]
            j = i
            while j < n and j < i + width and body[j] in _HEX:
                j += 1
            if j == i:
                out.append("\\" + c)
                continue
            code = int(body[i:j], 16)
            char = chr(code) if code <= 0x10FFFF else "\ufffd"
            i = j
        elif c == "c" and i < n:
            char = chr(ord(body[i].upper()) ^ 0x40) if body[i] != "?" else "\x7f"
            i += 1
        else:
            out.append("\\" + c)
            continue
        if char == "\0":
            break
        out.append(char)
    return "".join(out)


def _dq_unescape(text: str) -> str:
    """Backslash handling inside double quotes: only ``$ ` " \\`` and newline are special."""
    if "\\" not in text:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n and text[i + 1] in '$`"\\\n':
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def unquoted(text: str) -> str:
    """Escaped form of unquoted word text: a backslash quotes the next character."""
    if "\\" not in text:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n:
            if text[i + 1] != "\n":
                out.append(quote(text[i + 1]))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def expand_tilde(e: str, home: str | None, *, after_colons: bool = False) -> str:
    """Tilde expansion at the start of the word (and after ``:`` for assignments)."""
    if "~" not in e:
        return e
    if after_colons and ":" in e:
        return ":".join(expand_tilde(part, home) for part in e.split(":"))
    if not e.startswith("~"):
        return e
    slash = e.find("/")
    prefix = e[1:] if slash == -1 else e[1:slash]
    rest = "" if slash == -1 else e[slash:]
    if "\\" in prefix or MARK in prefix or MARK_NONEMPTY in prefix:
        return e
    if prefix == "":
        return (quote(home) if home else "~") + rest
    if prefix == "+":
        return "." + rest
    if prefix == "-":
        return MARK + rest
    if prefix == "root":
        return "/root" + rest
    return quote("/home/" + prefix) + rest


_LITERAL_TYPES = frozenset({"word", "number", "regex", "extglob_pattern", "test_operator"})


class WordResolver:
    """Turns literal nodes into :class:`ResolvedWord` for one source text."""

    __slots__ = (
        "_positionals",
        "_sink",
        "_split",
        "_src",
        "bound",
        "home",
        "positional_reads",
        "pwd_as_dot",
    )

    def __init__(
        self,
        src: bytes,
        sink: Sink,
        *,
        home: str | None,
        positionals: tuple[str, ...] | None,
    ) -> None:
        self._src = src
        self._sink = sink
        self.home = home
        self._positionals = positionals
        self._split = False
        self.pwd_as_dot = True
        self.bound: dict[str, str] = {}
        """Loop variables whose value is one literal item (escaped; a glob stays a glob),
        used where they are double-quoted (``for f in *.md; do wc -l "$f"; done``)."""
        self.positional_reads = 0
        """How often ``$1…`` were read or changed (a walk that never did is the same walk
        whatever they are bound to)."""

    def text(self, node: Node) -> str:
        return self._src[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def word(self, node: Node, *, tilde: bool = True, assignment: bool = False) -> ResolvedWord:
        """Resolve one word node."""
        kind = node.type
        raw = self.text(node)
        if kind == "word":
            e = unquoted(raw)
            return ResolvedWord(raw, expand_tilde(e, self.home) if tilde else e)
        self._split = False
        e = self._e(node, False)
        if tilde:
            e = expand_tilde(e, self.home, after_colons=assignment)
        return ResolvedWord(raw, e, kind == "process_substitution", self._split)

    # -- positionals ---------------------------------------------------------------------

    def invalidate_positionals(self) -> None:
        """``set --``/``shift`` changed ``$1…``: they are unknown from here on."""
        self.positional_reads += 1
        self._positionals = None

    def positional_words(self) -> list[str] | None:
        """``$1…$n`` in escaped form when bound, else ``None``."""
        self.positional_reads += 1
        if self._positionals is None:
            return None
        return list(self._positionals[1:])

    def _param(self, name: str, in_dq: bool) -> str:
        if in_dq and name in self.bound:
            return self.bound[name]
        if name == "HOME":
            return quote(self.home) if self.home else "~"
        if name == "PWD":
            return "." if self.pwd_as_dot else MARK_NONEMPTY
        if name.isdigit():
            self.positional_reads += 1
            if self._positionals is None:
                return self._unknown(in_dq)
            index = int(name)
            if index >= len(self._positionals):
                return ""
            e = self._positionals[index]
            value = unescape(e)
            if value is None:
                return self._unknown(in_dq)
            if not in_dq and (any(ch in value for ch in " \t\n*?[") or value == ""):
                return self._unknown(in_dq)
            return quote(value)
        if name == "#":
            return MARK_NONEMPTY
        return self._unknown(in_dq)

    def _unknown(self, in_dq: bool, mark: str = MARK) -> str:
        if not in_dq:
            self._split = True
        return mark

    # -- the recursive part --------------------------------------------------------------

    def _e(self, node: Node, in_dq: bool) -> str:
        kind = node.type
        if kind in _LITERAL_TYPES:
            text = self.text(node)
            return quote(text) if in_dq else unquoted(text)
        if kind == "raw_string":
            return quote(self.text(node)[1:-1])
        if kind == "ansi_c_string":
            return quote(decode_ansi_c(self.text(node)[2:-1]))
        if kind == "string":
            return self._string(node)
        if kind == "translated_string":
            inner = node.named_children
            return self._string(inner[0]) if inner else ""
        if kind == "concatenation":
            return self._sequence(node, in_dq)
        if kind == "simple_expansion":
            return self._simple_expansion(node, in_dq)
        if kind == "expansion":
            return self._expansion(node, in_dq)
        if kind == "command_substitution":
            self._sink.substitution(node)
            return self._unknown(in_dq)
        if kind == "process_substitution":
            self._sink.substitution(node)
            return MARK
        if kind == "brace_expression":
            return self.text(node)
        if kind in ("$", "``"):
            return quote("$") if kind == "$" else ""
        if kind == "{" or kind == "}" or kind == "[" or kind == "]":
            return kind
        self.descend(node)
        return self._unknown(in_dq)

    def _sequence(self, node: Node, in_dq: bool) -> str:
        parts: list[str] = []
        pos = node.start_byte
        for child in node.children:
            if child.start_byte > pos:
                gap = self._src[pos : child.start_byte].decode("utf-8", "replace")
                parts.append(quote(_dq_unescape(gap)) if in_dq else unquoted(gap))
            parts.append(self._e(child, in_dq))
            pos = child.end_byte
        if node.end_byte > pos:
            gap = self._src[pos : node.end_byte].decode("utf-8", "replace")
            parts.append(quote(_dq_unescape(gap)) if in_dq else unquoted(gap))
        return "".join(parts)

    def _string(self, node: Node) -> str:
        parts: list[str] = []
        children = node.children
        pos = node.start_byte + 1
        end = node.end_byte - 1
        for child in children:
            kind = child.type
            if kind == '"':
                continue
            if child.start_byte > pos:
                gap = self._src[pos : child.start_byte].decode("utf-8", "replace")
                parts.append(quote(_dq_unescape(gap)))
            if kind == "string_content":
                parts.append(quote(_dq_unescape(self.text(child))))
            elif kind == "$":
                parts.append(quote("$"))
            else:
                parts.append(self._e(child, True))
            pos = child.end_byte
        if end > pos:
            gap = self._src[pos:end].decode("utf-8", "replace")
            parts.append(quote(_dq_unescape(gap)))
        return "".join(parts)

    def _simple_expansion(self, node: Node, in_dq: bool) -> str:
        named = node.named_children
        if len(named) != 1:
            self.descend(node)
            return self._unknown(in_dq)
        name = self.text(named[0])
        if len(name) > 1 and name.isdigit():
            # ``$10`` is ``${1}0`` in bash.
            return self._param(name[0], in_dq) + quote(name[1:])
        return self._param(name, in_dq)

    def _expansion(self, node: Node, in_dq: bool) -> str:
        names: list[Node] = []
        operators: list[str] = []
        others: list[Node] = []
        length_prefix = False
        for index, child in enumerate(node.children):
            kind = child.type
            if kind in ("${", "}"):
                continue
            if kind in ("variable_name", "special_variable_name"):
                names.append(child)
            elif node.field_name_for_child(index) == "operator":
                text = self.text(child)
                if text == "#" and not names and not operators:
                    length_prefix = True
                operators.append(text)
            else:
                others.append(child)
        if "@" in operators and "P" in operators:
            self._sink.prompt_expansion(node)
        if names and any(op in ("=", ":=") for op in operators):
            self._sink.param_assignment(self.text(names[0]), node)
        for other in others:
            if other.type in ("regex", "word"):
                text = self.text(other)
                if "$(" in text or "`" in text or "<(" in text or ">(" in text:
                    self._sink.opaque_text(text, other)
        self.descend(node)
        if len(names) == 1 and not operators and not others:
            return self._param(self.text(names[0]), in_dq)
        if length_prefix or operators[:1] == [":?"]:
            return self._unknown(in_dq, MARK_NONEMPTY)
        if (
            operators[:1] in ([":-"], [":="])
            and others
            and others[0].type in ("word", "number", "raw_string")
            and others[0].end_byte > others[0].start_byte
        ):
            return self._unknown(in_dq, MARK_NONEMPTY)
        return self._unknown(in_dq)

    def descend(self, node: Node) -> None:
        """Report substitutions and parameter side effects anywhere under ``node``."""
        arithmetic = node.type == "arithmetic_expansion"
        for child in node.named_children:
            kind = child.type
            if kind in ("command_substitution", "process_substitution"):
                self._sink.substitution(child)
            elif kind == "expansion":
                self._expansion(child, True)
            elif kind == "subscript":
                self.subscript(child)
            elif kind == "raw_string" and arithmetic:
                self.literal_code(child)
            elif child.named_child_count:
                self.descend(child)

    def subscript(self, node: Node) -> None:
        """``a[INDEX]``: bash expands INDEX, then evaluates it as arithmetic, which expands it
        again, so a ``$(…)`` that quoting kept literal (``a['$(cmd)']``) still runs."""
        index = node.child_by_field_name("index")
        if index is None:
            return
        value = unescape(self._e(index, True))
        if value and ("$(" in value or "`" in value):
            self._sink.opaque_text(value, index)

    def literal_code(self, node: Node) -> None:
        """A single-quoted string where bash does not honour the quotes (arithmetic)."""
        text = self.text(node)[1:-1]
        if "$(" in text or "`" in text:
            self._sink.opaque_text(text, node)
