"""Fusing ranked lists: de-duplicate by normalised URL, rank by agreement and position.

Each list is one provider's answer to one query. A result scores ``1 / (K + rank)`` in every
list that holds it (reciprocal rank fusion, ``K = 60``), so a page several providers agree
on outranks a page only one of them placed slightly higher, and a first place still counts
for more than a tenth. Ties go to the better single rank, then to the earlier list (the
administrator's provider order). A page repeated inside one list counts once there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date

from .hits import Hit, RankedHit, Source
from .urls import url_key

__all__ = ["RRF_K", "fuse"]

RRF_K = 60


@dataclass(slots=True)
class _Group:
    first: int
    best: Hit
    best_rank: tuple[int, int]
    score: float = 0.0
    sources: list[Source] = field(default_factory=list)
    snippet: str = ""
    dated: tuple[tuple[int, int], date, str] | None = None


def fuse(lists: Sequence[Sequence[Hit]], *, k: int = RRF_K) -> list[RankedHit]:
    """One ranked, de-duplicated list from several providers' (or queries') lists."""
    groups: dict[str, _Group] = {}
    keys: dict[str, str] = {}
    for order, hits in enumerate(lists):
        seen: set[str] = set()
        for hit in hits:
            key = keys.get(hit.url)
            if key is None:
                key = keys[hit.url] = url_key(hit.url)
            if key in seen:
                continue
            seen.add(key)
            rank = (hit.position, order)
            group = groups.get(key)
            if group is None:
                group = groups[key] = _Group(first=len(groups), best=hit, best_rank=rank)
            elif rank < group.best_rank:
                group.best, group.best_rank = hit, rank
            group.score += 1.0 / (k + hit.position)
            group.sources.append(
                Source(provider=hit.provider, position=hit.position, query=hit.query)
            )
            if hit.snippet and (not group.snippet or rank == group.best_rank):
                group.snippet = hit.snippet
            if hit.published is not None and (group.dated is None or rank < group.dated[0]):
                label = f"{hit.provider} {hit.date_field}" if hit.date_field else hit.provider
                group.dated = (rank, hit.published, label)
    ordered = sorted(groups.values(), key=lambda g: (-g.score, g.best_rank, g.first))
    return [
        RankedHit(
            title=g.best.title or g.best.url,
            url=g.best.url,
            snippet=g.snippet,
            published=g.dated[1] if g.dated else None,
            date_source=g.dated[2] if g.dated else None,
            sources=tuple(sorted(g.sources, key=lambda s: s.position)),
            score=g.score,
        )
        for g in ordered
    ]
