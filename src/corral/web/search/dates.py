"""Reading the dates providers attach to results: ISO, e-mail style, prose and "3 days ago".

Every provider spells dates its own way (Tavily ``published_date`` in RFC 2822, Brave
``page_age`` in ISO and ``age`` in prose, SearXNG ``publishedDate`` in ISO, Anthropic
``page_age`` in prose). :func:`parse_date` turns any of them into a calendar date, or
``None`` when it cannot tell: a date we cannot read is reported as unknown, never guessed.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from email.utils import parsedate_to_datetime

__all__ = ["parse_date"]

_ISO = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?(?:\.\d+)?)?")
_RELATIVE = re.compile(
    r"^(?:(\d+)|an?|one)\s+(second|minute|hour|day|week|month|year)s?\s+ago$", re.IGNORECASE
)
_PROSE_FORMATS = ("%B %d, %Y", "%b %d, %Y", "%d %B %Y", "%d %b %Y")
_UNIT_DAYS = {
    "second": 0.0,
    "minute": 0.0,
    "hour": 1 / 24,
    "day": 1.0,
    "week": 7.0,
    "month": 30.0,
    "year": 365.0,
}


def _plausible(value: date, today: date) -> date | None:
    # A provider's date far in the future or before the web is noise, not a fact.
    if value.year < 1990 or value > today + timedelta(days=2):
        return None
    return value


def parse_date(raw: object, *, now: datetime | None = None) -> date | None:
    """The calendar date ``raw`` names, or ``None`` when it names none we can trust."""
    if not isinstance(raw, str):
        return None
    text = " ".join(raw.split()).strip().rstrip(".")
    if not text:
        return None
    current = now or datetime.now(UTC)
    today = current.date()
    iso = _ISO.match(text)
    if iso:
        try:
            return _plausible(date(int(iso[1]), int(iso[2]), int(iso[3])), today)
        except ValueError:
            return None
    relative = _RELATIVE.match(text)
    if relative:
        count = int(relative[1]) if relative[1] else 1
        days = _UNIT_DAYS[relative[2].lower()] * count
        return (current - timedelta(days=days)).date()
    lowered = text.lower()
    if lowered in ("today", "just now"):
        return today
    if lowered == "yesterday":
        return today - timedelta(days=1)
    if "," in text and text[:3].isalpha() and ":" in text:
        try:
            return _plausible(parsedate_to_datetime(text).date(), today)
        except (TypeError, ValueError, IndexError):
            pass
    for fmt in _PROSE_FORMATS:
        try:
            return _plausible(datetime.strptime(text, fmt).date(), today)
        except ValueError:
            continue
    return None
