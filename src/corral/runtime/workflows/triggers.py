"""When a schedule fires: a plain function of (schedule, anchor, now, policy).

The anchor is the latest slot already handled (fired or skipped), or the moment the
schedule was set. :func:`plan` answers which slot is due now, whether it runs or is
skipped, and the slot after it; it touches no store and no clock, so any engine can call
it. A slot is *missed* when it is older than ``grace`` at the time a scheduler looks: the
platform was down. Policy ``run_once`` fires the latest missed slot once (however many were
missed); ``skip`` records it as skipped and waits for the next one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

__all__ = ["DEFAULT_GRACE", "MissedPolicy", "Plan", "next_slot", "plan"]

MissedPolicy = Literal["run_once", "skip"]
DEFAULT_GRACE = timedelta(minutes=2)


@dataclass(frozen=True, slots=True)
class Plan:
    """What a scheduler does now for one workflow."""

    slot: datetime | None
    """The due slot, or None when nothing is due."""
    run: bool
    """Start a run for ``slot`` (False: record it as skipped)."""
    missed: bool
    """``slot`` was older than the grace period: the platform was down at its time."""
    next_fire_at: datetime | None
    """The slot after this one (None: a one-shot that has fired, or no schedule)."""


def next_slot(schedule: dict[str, Any] | None, after: datetime) -> datetime | None:
    """The first slot strictly after ``after``."""
    if not schedule:
        return None
    if "at" in schedule:
        at = datetime.fromisoformat(schedule["at"]).astimezone(UTC)
        return at if at > after else None
    from croniter import croniter  # loads with the first cron schedule, not every open

    zone = ZoneInfo(schedule.get("timezone") or "UTC")
    found: datetime = croniter(schedule["cron"], after.astimezone(zone)).get_next(datetime)
    return found.astimezone(UTC)


def _latest_slot(schedule: dict[str, Any], anchor: datetime, now: datetime) -> datetime | None:
    """The latest slot in ``(anchor, now]``."""
    if "at" in schedule:
        at = datetime.fromisoformat(schedule["at"]).astimezone(UTC)
        return at if anchor < at <= now else None
    from croniter import croniter

    zone = ZoneInfo(schedule.get("timezone") or "UTC")
    # get_prev is strict, so step just past ``now`` to count a slot that is exactly now.
    probe = (now + timedelta(microseconds=1)).astimezone(zone)
    latest: datetime = croniter(schedule["cron"], probe).get_prev(datetime)
    latest = latest.astimezone(UTC)
    return latest if latest > anchor else None


def plan(
    schedule: dict[str, Any] | None,
    anchor: datetime,
    now: datetime,
    policy: MissedPolicy = "run_once",
    grace: timedelta = DEFAULT_GRACE,
) -> Plan:
    """What is due for ``schedule`` at ``now`` when slots up to ``anchor`` are handled."""
    if not schedule:
        return Plan(slot=None, run=False, missed=False, next_fire_at=None)
    slot = _latest_slot(schedule, anchor, now)
    if slot is None:
        return Plan(slot=None, run=False, missed=False, next_fire_at=next_slot(schedule, anchor))
    missed = now - slot > grace
    return Plan(
        slot=slot,
        run=not missed or policy == "run_once",
        missed=missed,
        next_fire_at=next_slot(schedule, slot),
    )
