"""A workflow's setup: what it does, when it runs, and how its runs are bounded.

The setup is stored as JSON, one version per change. :func:`apply_changes` is the one place
a change is checked: it takes the stored setup and the fields a caller sent and returns the
new setup and the names of the fields that changed, or raises :class:`InvalidArguments`
naming every field that was wrong and what to send instead.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from corral.errors import InvalidArguments, UsageError
from corral.runtime.budgets import parse_budget

__all__ = [
    "EDITABLE",
    "STATUSES",
    "Status",
    "apply_changes",
    "new_setup",
    "parse_instant",
]

Status = Literal["active", "draft", "paused", "archived"]
STATUSES: tuple[Status, ...] = ("active", "draft", "paused", "archived")

EDITABLE = (
    "title",
    "instruction",
    "schedule",
    "webhook",
    "model",
    "goal",
    "loop",
    "packages_off",
    "tools_off",
    "max_runtime_minutes",
    "budget",
    "status",
    "delivery",
    "shared_with",
)
"""Fields the tool's ``set`` may send."""

SHARE_ENTRY = re.compile(r"(user|role):[A-Za-z0-9_.@-]{1,100}")
"""``user:NAME`` or ``role:NAME``, with the characters user and role names may hold."""
SHARE_MAX = 50

TITLE_MAX = 200
INSTRUCTION_MAX = 20_000


def new_setup() -> dict[str, Any]:
    """The setup every workflow starts from before its first change."""
    return {
        "title": "",
        "instruction": "",
        "status": "active",
        "schedule": None,
        "webhook": None,
        "model": None,
        "goal": None,
        "loop": None,
        "packages_off": [],
        "tools_off": [],
        "max_runtime_minutes": None,
        "budget": None,
        "delivery": [],
        "shared_with": [],
        "template": None,
        "evolve": None,
    }


def apply_changes(
    current: Mapping[str, Any],
    changes: Mapping[str, Any],
    *,
    now: datetime,
    known_tools: frozenset[str],
    known_packages: frozenset[str],
    creating: bool,
) -> tuple[dict[str, Any], list[str]]:
    """``current`` with ``changes`` applied, and the fields whose value changed."""
    problems: list[str] = []
    setup = copy.deepcopy(dict(current))
    for name, value in changes.items():
        if name == "workflow_id":
            continue
        if name not in EDITABLE:
            problems.append(f"{name!r} cannot be set; the fields are {', '.join(EDITABLE)}")
            continue
        try:
            setup[name] = _checked(name, value, now, known_tools, known_packages)
        except ValueError as exc:
            problems.append(f"{name}: {exc}")
    if creating:
        for required in ("title", "instruction"):
            if not setup.get(required):
                problems.append(f"{required}: a new workflow needs a {required}")
    if problems:
        raise InvalidArguments(
            "the workflow was not changed: " + "; ".join(problems),
            data={"problems": problems},
        )
    changed = [k for k in EDITABLE if k in changes and setup.get(k) != current.get(k)]
    return setup, changed


def _checked(
    name: str, value: Any, now: datetime, tools: frozenset[str], packages: frozenset[str]
) -> Any:
    if name in ("title", "instruction"):
        text = str(value).strip()
        cap = TITLE_MAX if name == "title" else INSTRUCTION_MAX
        if not text:
            raise ValueError("may not be empty")
        if len(text) > cap:
            raise ValueError(f"is {len(text):,} characters; the most is {cap:,}")
        return text
    if name == "schedule":
        return _schedule(value, now)
    if name == "webhook":
        return _webhook(value)
    if name == "status":
        if value not in ("active", "draft", "paused"):
            raise ValueError(
                f"{value!r} is not one of 'active', 'draft', 'paused' (archiving is a route: "
                "`corral workflows archive`)"
            )
        return value
    if name == "tools_off":
        return _names(value, tools, "tool", "`corral tools list` shows them")
    if name == "packages_off":
        return _names(value, packages, "package", "`corral packages list` shows them")
    if name == "delivery":
        return sorted({str(v).strip() for v in value if str(v).strip()})
    if name == "shared_with":
        return _share(value)
    if name == "budget":
        try:
            budget = parse_budget(value, where="budget")
        except UsageError as exc:
            raise ValueError(str(exc)) from None
        return budget.to_json() or None
    if name in ("model", "goal"):
        text = str(value).strip() if value is not None else ""
        return text or None
    return value  # loop, max_runtime_minutes: the schema bounds them


def _names(value: Any, known: frozenset[str], kind: str, hint: str) -> list[str]:
    names = sorted({str(v) for v in value})
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"no {kind} named {', '.join(map(repr, unknown))}; {hint}")
    return names


def _share(value: Any) -> list[str]:
    if not isinstance(value, list):
        raise ValueError('send a list such as ["user:max", "role:ops"], or [] to stop sharing')
    entries = sorted({str(v).strip() for v in value})
    wrong = [e for e in entries if not SHARE_ENTRY.fullmatch(e)]
    if wrong:
        raise ValueError(
            f"{', '.join(map(repr, wrong))} is not 'user:NAME' or 'role:NAME' (a user's or a "
            "role's name, as `corral users list` shows them)"
        )
    if len(entries) > SHARE_MAX:
        raise ValueError(f"names {len(entries)} entries; the most is {SHARE_MAX}")
    return entries


def _schedule(value: Any, now: datetime) -> dict[str, str] | None:
    if value is None:
        return None
    has_cron, has_at = "cron" in value, "at" in value
    if has_cron == has_at:
        raise ValueError(
            'send either {"cron": "0 7 * * 1-5", "timezone": "Europe/Paris"} or '
            '{"at": "2027-01-01T09:00:00Z"}, or null for manual runs only'
        )
    if has_at:
        if "timezone" in value:
            raise ValueError("timezone goes with cron; give 'at' with its UTC offset instead")
        at = parse_instant(str(value["at"]))
        if at <= now:
            raise ValueError(f"{value['at']!r} is in the past; a one-shot time must be ahead")
        return {"at": at.astimezone(UTC).isoformat()}
    from croniter import croniter  # loads with the first cron schedule, not every open

    expression = " ".join(str(value["cron"]).split())
    if len(expression.split()) != 5 or not croniter.is_valid(expression):
        raise ValueError(
            f"{value['cron']!r} is not a five-field cron expression (minute hour day month "
            "weekday), e.g. '0 7 * * 1-5'"
        )
    zone = str(value.get("timezone") or "UTC")
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{zone!r} is not an IANA time zone such as 'Europe/Paris'") from None
    return {"cron": expression, "timezone": zone}


def _webhook(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    schema = value.get("body_schema", {"type": "object"})
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = "/" + "/".join(str(p) for p in exc.path)
        raise ValueError(
            f"body_schema is not a valid JSON Schema at {where}: {exc.message}"
        ) from None
    return {"body_schema": schema}


def parse_instant(text: str) -> datetime:
    """An ISO 8601 time; one without an offset is read as UTC."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO 8601 time such as 2027-01-01T09:00:00Z") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
