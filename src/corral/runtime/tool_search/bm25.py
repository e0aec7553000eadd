"""Okapi BM25 over a handful of short documents (tool names, descriptions, parameters).

Small enough to write here: a few dozen to a few hundred documents, scored in
microseconds each, with no index to keep. Tokens split words on case changes, digits and
punctuation (``git_diff_staged`` and ``getCurrentTime`` give their words).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["BM25", "words"]

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def words(text: str) -> list[str]:
    """Lower-cased words of ``text``: ``fetchURL_v2`` gives ``fetch``, ``url``, ``v``, ``2``."""
    return [w.lower() for w in _WORD.findall(text)]


@dataclass(frozen=True, slots=True)
class _Document:
    terms: Counter[str]
    length: int


class BM25:
    """Scores of a query against fixed documents (``k1`` and ``b`` as usual)."""

    def __init__(self, documents: Sequence[Sequence[str]], *, k1: float = 1.2, b: float = 0.75):
        self._k1, self._b = k1, b
        self._documents = [_Document(Counter(d), len(d)) for d in documents]
        count = len(self._documents)
        self._average = sum(d.length for d in self._documents) / count if count else 0.0
        frequency: Counter[str] = Counter()
        for document in self._documents:
            frequency.update(document.terms.keys())
        # The "plus one" form keeps the weight positive for a word in most documents.
        self._idf = {
            term: math.log(1 + (count - n + 0.5) / (n + 0.5)) for term, n in frequency.items()
        }

    def scores(self, query: Sequence[str]) -> list[float]:
        """One score per document, in order; 0 where no query word occurs."""
        terms = set(query)
        k1, b, average = self._k1, self._b, self._average or 1.0
        scores = []
        for document in self._documents:
            score = 0.0
            norm = k1 * (1 - b + b * document.length / average)
            for term in terms:
                tf = document.terms.get(term, 0)
                if tf:
                    score += self._idf[term] * tf * (k1 + 1) / (tf + norm)
            scores.append(score)
        return scores
