"""Research ranking: fused relevance, then freshness and the authority of the source.

``score = 0.6 * relevance + 0.25 * freshness + 0.15 * authority``, each in [0, 1]:

- relevance: the fused (reciprocal-rank) score, divided by the best one in the list;
- freshness: ``0.5 ** (age in days / 365)`` from the result's date; an unknown date scores
  0, so an undated page never outranks a dated one on freshness alone;
- authority: 1.0 for government, military, education and intergovernmental hosts
  (``.gov``, ``.edu``, ``gov.uk``, ``ac.jp``, ``.int``…), 0.8 for established references
  and standards bodies, 0.7 for documentation hosts (``docs.``, ``developer.``), 0.1 for
  user-generated aggregators, 0.4 otherwise.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from .domains import host_of
from .hits import RankedHit

__all__ = ["WEIGHTS", "authority", "freshness", "research_rank"]

WEIGHTS = (0.6, 0.25, 0.15)
HALF_LIFE_DAYS = 365.0

_OFFICIAL_SUFFIXES = (".gov", ".mil", ".edu", ".int")
_OFFICIAL_SECOND_LEVEL = frozenset({"gov", "gouv", "gob", "govt", "mil", "edu", "ac"})
_REFERENCES = (
    "wikipedia.org",
    "arxiv.org",
    "nature.com",
    "science.org",
    "acm.org",
    "ieee.org",
    "ietf.org",
    "w3.org",
    "iso.org",
    "who.int",
    "europa.eu",
    "python.org",
    "mozilla.org",
    "readthedocs.io",
    "github.com",
)
_DOCS_PREFIXES = ("docs.", "developer.", "developers.", "learn.", "documentation.")
_AGGREGATORS = ("pinterest.com", "quora.com", "answers.com", "scribd.com")


def _under(host: str, domains: tuple[str, ...]) -> bool:
    return any(host == d or host.endswith("." + d) for d in domains)


def authority(url: str) -> float:
    """How much a source's host suggests it is authoritative, in [0, 1]."""
    host = host_of(url) or ""
    labels = host.split(".")
    if host.endswith(_OFFICIAL_SUFFIXES) or (
        len(labels) >= 3 and labels[-2] in _OFFICIAL_SECOND_LEVEL
    ):
        return 1.0
    if _under(host, _REFERENCES):
        return 0.8
    if host.startswith(_DOCS_PREFIXES):
        return 0.7
    if _under(host, _AGGREGATORS):
        return 0.1
    return 0.4


def freshness(published: date | None, today: date) -> float:
    """How recent a date is, in [0, 1] (half-value after a year); 0 when unknown."""
    if published is None:
        return 0.0
    age = max((today - published).days, 0)
    return float(0.5 ** (age / HALF_LIFE_DAYS))


def research_rank(hits: list[RankedHit], *, today: date) -> list[RankedHit]:
    """``hits`` re-scored by relevance, freshness and authority, best first."""
    if not hits:
        return []
    best = max(h.score for h in hits) or 1.0
    w_rel, w_fresh, w_auth = WEIGHTS
    scored = [
        replace(
            hit,
            score=w_rel * hit.score / best
            + w_fresh * freshness(hit.published, today)
            + w_auth * authority(hit.url),
        )
        for hit in hits
    ]
    return sorted(scored, key=lambda h: -h.score)
