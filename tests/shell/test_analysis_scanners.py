"""``split_tokens`` gives exactly what a character-by-character reading gives.

It splits code strings and ``--opt=/path`` words into path-ish pieces with one regular
expression now; the reference reading below is the loop it replaced, and any disagreement
on any string is a bug.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from corral.shell.analysis._escaped import MARK, MARK_NONEMPTY
from corral.shell.analysis._paths import split_tokens

_SEPARATORS = frozenset(" \t\n'\"`()<>|&;=:,{}[]$?#@")
_ALWAYS_SPLIT = frozenset(" \t\n'\"`()<>|&;=:,$@")

# Every character the splitter treats specially, plus plain ones, so that short strings
# hit every combination (a backslash before each kind, at the end, doubled…).
_ALPHABET = "\\ab/.~*?[]{}-" + MARK + MARK_NONEMPTY + "".join(_SEPARATORS)
WORDS = st.text(alphabet=_ALPHABET, max_size=12)


def reference_split_tokens(e: str) -> list[str]:
    tokens: list[str] = []
    current: list[str] = []
    i, n = 0, len(e)
    while i < n:
        c = e[i]
        if c == "\\" and i + 1 < n:
            if e[i + 1] in _SEPARATORS:
                if current:
                    tokens.append("".join(current))
                    current = []
            else:
                current.append(e[i : i + 2])
            i += 2
            continue
        if c in _ALWAYS_SPLIT:
            if current:
                tokens.append("".join(current))
                current = []
        else:
            current.append(c)
        i += 1
    if current:
        tokens.append("".join(current))
    return tokens


@settings(max_examples=3000, deadline=None)
@given(WORDS)
def test_split_tokens_agrees_with_a_character_by_character_reading(e: str) -> None:
    assert split_tokens(e) == reference_split_tokens(e)


def test_split_tokens_edges() -> None:
    # An escaped backslash does not escape what follows it; a trailing backslash stays;
    # an escaped separator splits even where a bare one does not.
    assert split_tokens("a\\\\ b") == ["a\\\\", "b"]
    assert split_tokens("x\\{y{z\\") == ["x", "y{z\\"]
    assert split_tokens("--out=/p\\ q") == ["--out", "/p", "q"]
