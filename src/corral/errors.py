"""Corral's error tree.

Every error Corral raises derives from :class:`CorralError`. Messages say what was wrong
and what to do next, with identifiers quoted by ``!r``.

::

    CorralError
    ├── UsageError            misuse of Corral itself: bad configuration, bad API arguments
    │   ├── ConfigError       a settings file, package folder or manifest that cannot be used
    │   ├── NotFound          a named thing (user, agent, approval, source…) does not exist
    │   └── AlreadyDecided    a decision a person was asked for was answered (or ended) before
    ├── ToolError             a tool call that ended without a result; carries a stable ``code``
    │   └── Refusal           the pipeline or a policy refused the call before or instead of running
    │       ├── NotVisible          code ``not_visible``
    │       ├── InvalidArguments    code ``invalid_arguments``
    │       ├── FeatureMissing      code ``feature_missing``
    │       ├── PolicyDenied        code ``policy_denied``
    │       └── ApprovalDenied      code ``approval_denied``
    └── RunFailure            an agent run that could not go on (model unavailable, limits hit…)

A :class:`ToolError` raised inside a handler becomes an error result the model can read and
recover from; it never crashes the caller. ``code`` values are stable snake_case strings that
clients may match on.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AlreadyDecided",
    "ApprovalDenied",
    "ConfigError",
    "ConversationBusy",
    "CorralError",
    "FeatureMissing",
    "InvalidArguments",
    "NotFound",
    "NotVisible",
    "PolicyDenied",
    "Refusal",
    "RunFailure",
    "ToolError",
    "UsageError",
]


class CorralError(Exception):
    """Base of every error Corral raises."""


class UsageError(CorralError):
    """Corral was used in a way it does not support; the message says how to fix it."""


class ConfigError(UsageError):
    """A settings file, package folder or manifest that cannot be used as written."""


class NotFound(UsageError):
    """A named object does not exist."""


class AlreadyDecided(UsageError):
    """A pending decision (approval, question…) was already answered, from any surface, or
    ended (expired, its run over): the first answer wins (HTTP 409)."""


class ConversationBusy(UsageError):
    """The conversation has a run running or parked, and what was asked needs it idle
    (a rewind); the message says what to do (HTTP 409)."""


class ToolError(CorralError):
    """A tool call ended without a result.

    ``code`` is a stable snake_case identifier; ``message`` tells the model or the user what
    went wrong and how to recover. ``data`` carries structured details for the card.
    """

    default_code = "tool_error"

    def __init__(
        self, message: str, *, code: str | None = None, data: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.data = data or {}


class Refusal(ToolError):
    """The dispatch pipeline or a policy refused the call; nothing ran."""

    default_code = "refused"


class NotVisible(Refusal):
    """The tool is not in the caller's visible set for this run."""

    default_code = "not_visible"


class InvalidArguments(Refusal):
    """The arguments do not match the tool's input schema."""

    default_code = "invalid_arguments"


class FeatureMissing(Refusal):
    """The caller lacks a feature grant the tool or one of its arguments needs."""

    default_code = "feature_missing"


class PolicyDenied(Refusal):
    """A URI policy or another guard denied a path or an action."""

    default_code = "policy_denied"


class ApprovalDenied(Refusal):
    """A person declined the call when asked for approval."""

    default_code = "approval_denied"


class RunFailure(CorralError):
    """An agent run could not continue."""
