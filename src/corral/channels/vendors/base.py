"""What every channel vendor speaks: inbound events, outbound messages, the vendor protocol.

A vendor turns a signed HTTP request (or a polled update) into :class:`Inbound` events and
an :class:`Outbound` message into calls to its API. Signatures are checked before anything
is parsed; a bad one raises :class:`BadSignature`, which the caller answers with 401 and
stores nothing for.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from corral.errors import CorralError

__all__ = [
    "BadSignature",
    "Choice",
    "EditsMessages",
    "FieldSpec",
    "Inbound",
    "Outbound",
    "Parsed",
    "Poster",
    "SendFailed",
    "Vendor",
    "encode_json",
]


class BadSignature(CorralError):
    """The request's signature, token or timestamp does not check out; answer 401."""


class SendFailed(CorralError):
    """The vendor refused or could not take an outbound message.

    ``retry`` says whether trying again may help (rate limits, 5xx, network errors);
    ``after`` is a wait the vendor asked for, in seconds."""

    def __init__(self, message: str, *, retry: bool, after: float | None = None) -> None:
        super().__init__(message)
        self.retry = retry
        self.after = after


@dataclass(frozen=True, slots=True)
class Choice:
    """A button: what it shows and the value a press sends back."""

    label: str
    value: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Inbound:
    """One event from a chat: a text message or a button press (``choice``)."""

    event_id: str
    chat_id: str
    sender_id: str
    sender_name: str = ""
    text: str = ""
    choice: str | None = None
    thread: str = ""
    ack_id: str | None = None
    """A vendor handle to acknowledge a button press with (Telegram's callback query id)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Outbound:
    """A message for one chat, with optional buttons."""

    chat_id: str
    text: str
    thread: str = ""
    choices: tuple[Choice, ...] = ()
    key: str = ""
    """The same for every try of one piece of one row, for vendors that deduplicate."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Parsed:
    """What an inbound request carried: events, or a direct answer (a URL challenge)."""

    events: list[Inbound] = field(default_factory=list)
    answer: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldSpec:
    """A field a connection of a vendor needs (the names ``connect list`` shows)."""

    name: str
    secret: bool
    required: bool
    description: str


def encode_json(payload: Mapping[str, Any]) -> bytes:
    """The exact bytes a :class:`Poster` sends for ``payload`` (compact, keys sorted)."""
    return json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()


class Poster(Protocol):
    """Sends one JSON request to a vendor host and returns the decoded JSON answer."""

    async def post(
        self, url: str, payload: Mapping[str, Any], *, headers: Mapping[str, str] | None = None
    ) -> tuple[int, Any]:
        """POST :func:`encode_json` of ``payload``; the status and decoded body (None if not
        JSON)."""
        ...


class Vendor(Protocol):
    """One channel provider."""

    provider: str
    fields: tuple[FieldSpec, ...]
    has_buttons: bool
    max_chars: int
    idempotent: bool
    """Whether a send may be repeated safely (the vendor deduplicates :attr:`Outbound.key`);
    otherwise a piece whose sender died mid-call is not sent again (at most once)."""

    def parse(
        self,
        headers: Mapping[str, str],
        body: bytes,
        secrets: Mapping[str, str],
        now: float,
    ) -> Parsed:
        """Check the signature, then read the events; :class:`BadSignature` if it fails."""
        ...

    def api_url(self, fields: Mapping[str, str], secrets: Mapping[str, str]) -> str:
        """The base URL outbound calls go to (its host is the only one allowed)."""
        ...

    async def send(
        self,
        poster: Poster,
        fields: Mapping[str, str],
        secrets: Mapping[str, str],
        message: Outbound,
    ) -> str | None:
        """Deliver one message (already within :attr:`max_chars`); :class:`SendFailed`.
        The vendor's id of the message when it has one (a vendor that edits needs it)."""
        ...


@runtime_checkable
class EditsMessages(Protocol):
    """A vendor that can change a message it sent: the text replaced, the buttons gone."""

    async def edit(
        self,
        poster: Poster,
        secrets: Mapping[str, str],
        chat_id: str,
        message_ref: str,
        text: str,
    ) -> None:
        """Replace the text of message ``message_ref`` (what :meth:`Vendor.send` returned)
        and drop its buttons; :class:`SendFailed`."""
        ...
