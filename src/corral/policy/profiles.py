"""Permission profiles: when a tool call needs a person's approval before it runs.

- ``safe``: every call that is not read-only asks first.
- ``balanced``: calls that may destroy or change things (not read-only and not marked
  non-destructive) ask first.
- ``auto``: nothing asks.

A tool may also declare ``approval: "always"`` (asks under safe and balanced whatever its
annotations) or ``"never"`` (tools that only shape the conversation itself).
A run's profile is fixed when it starts and may only become stricter.
"""

from __future__ import annotations

from typing import Literal, cast, get_args

from corral.errors import UsageError

__all__ = ["ApprovalMode", "Profile", "needs_approval", "parse_profile", "stricter"]

Profile = Literal["safe", "balanced", "auto"]
ApprovalMode = Literal["annotations", "always", "never"]

_STRICTNESS: dict[str, int] = {"safe": 2, "balanced": 1, "auto": 0}


def parse_profile(value: str) -> Profile:
    if value not in get_args(Profile):
        raise UsageError(f"unknown permission profile {value!r}; use one of safe, balanced, auto")
    return cast(Profile, value)


def stricter(current: Profile, requested: Profile) -> Profile:
    """The profile a run adopts when ``requested`` is asked for: never looser than ``current``."""
    return requested if _STRICTNESS[requested] > _STRICTNESS[current] else current


def needs_approval(
    profile: Profile,
    mode: ApprovalMode,
    *,
    read_only: bool,
    destructive: bool,
) -> bool:
    if profile == "auto" or mode == "never":
        return False
    if mode == "always":
        return True
    if profile == "safe":
        return not read_only
    return not read_only and destructive
