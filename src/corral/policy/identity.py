"""Who is calling: a user, their role and the grants that role carries."""

from __future__ import annotations

from dataclasses import dataclass

from corral.policy.grants import Grants

__all__ = ["Caller"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Caller:
    """A resolved caller. Rights are re-resolved from the store whenever work resumes."""

    user_id: str
    name: str
    role: str
    grants: Grants
