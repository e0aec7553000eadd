"""Finding tools by a regular expression or by BM25 over their names, descriptions and
parameter names; the caller hands in only the tools it may see."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from corral.errors import InvalidArguments
from corral.runtime.tool_search.bm25 import BM25, words
from corral.tools.contract import ToolSpec

__all__ = ["Match", "SearchMode", "parameter_names", "search"]

SearchMode = Literal["regex", "bm25"]

PATTERN_MAX_CHARS = 200
"""Longest regular expression accepted: a short pattern over short texts stays fast."""

NAME_WEIGHT = 3.0
PARAMETER_WEIGHT = 2.0
DESCRIPTION_WEIGHT = 1.0
"""Regex mode: what a match in each field counts, so a hit in a name ranks first."""


@dataclass(frozen=True, slots=True)
class Match:
    spec: ToolSpec
    score: float


def parameter_names(schema: Mapping[str, Any]) -> list[str]:
    """Every property name in ``schema``, nested objects and array items included."""
    return list(dict.fromkeys(_names(schema)))


def _names(schema: Any) -> Iterator[str]:
    if isinstance(schema, Mapping):
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            for name, sub in properties.items():
                yield str(name)
                yield from _names(sub)
        for key in ("items", "anyOf", "oneOf", "allOf"):
            sub = schema.get(key)
            if isinstance(sub, list):
                for item in sub:
                    yield from _names(item)
            elif sub is not None:
                yield from _names(sub)


def search(specs: Sequence[ToolSpec], query: str, *, mode: SearchMode, limit: int) -> list[Match]:
    """The best ``limit`` tools for ``query``, best first (ties by name)."""
    scored = _regex(specs, query) if mode == "regex" else _bm25(specs, query)
    found = [m for m in scored if m.score > 0]
    found.sort(key=lambda m: (-m.score, m.spec.name))
    return found[:limit]


def _regex(specs: Sequence[ToolSpec], pattern: str) -> list[Match]:
    if len(pattern) > PATTERN_MAX_CHARS:
        raise InvalidArguments(
            f"the pattern has {len(pattern)} characters; use at most {PATTERN_MAX_CHARS}"
        )
    try:
        compiled = re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise InvalidArguments(
            f"{pattern!r} is not a valid regular expression ({exc}); escape special "
            "characters, or use mode 'bm25' for plain words"
        ) from None
    matches = []
    for spec in specs:
        score = 0.0
        if compiled.search(spec.name):
            score += NAME_WEIGHT
        if any(compiled.search(p) for p in parameter_names(spec.input_schema)):
            score += PARAMETER_WEIGHT
        if compiled.search(spec.description):
            score += DESCRIPTION_WEIGHT
        matches.append(Match(spec, score))
    return matches


def _bm25(specs: Sequence[ToolSpec], query: str) -> list[Match]:
    terms = words(query)
    if not terms:
        raise InvalidArguments(
            f"the query {query!r} has no words to search for; give a few words such as "
            "'current time zone'"
        )
    documents = [
        # The name counts twice: a word in it says more than one in a long description.
        words(spec.name) * 2
        + words(" ".join(parameter_names(spec.input_schema)))
        + words(spec.description)
        for spec in specs
    ]
    scores = BM25(documents).scores(terms)
    return [Match(spec, score) for spec, score in zip(specs, scores, strict=True)]
