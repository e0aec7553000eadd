"""Channels: the messaging-channel service — inbound, pairing, connections, delivery.

``receive`` is the inbound path of every vendor: the signature is checked before anything
is stored (a bad one is 401 and stores nothing), a vendor's retry of an event already seen
is answered 200 and skipped, a chat over ``channels_flood_per_minute`` is dropped (one
notice a minute), an unknown sender gets an expiring pairing code and nothing reaches an
agent, and an approved sender's event is routed (:mod:`corral.channels.inbound`).
Outbound is the :class:`~corral.channels.relay.Relay`; Telegram connections without a
public URL are polled (:mod:`corral.channels.polling`). A workflow bound to a channel
posts each run's answer (or its failure and reason) to the chats that channel paired to
the workflow's owner (:mod:`corral.channels.delivery`); codes are decided through
:mod:`corral.channels.pairing`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from corral.channels.decisions import DecisionSurfaces
from corral.channels.delivery import WorkflowDelivery
from corral.channels.flood import FloodGate
from corral.channels.inbound import Router
from corral.channels.outbound import vendor_poster
from corral.channels.pairing import ADMIN, Pairing
from corral.channels.polling import poll
from corral.channels.relay import Chat, Relay
from corral.channels.store import ChannelStore, ConnectionRecord
from corral.channels.vendors import (
    BadSignature,
    GenericWebhook,
    Inbound,
    Poster,
    SendFailed,
    Slack,
    Telegram,
    Vendor,
)
from corral.connect import CredentialStore
from corral.errors import InvalidArguments, UsageError
from corral.policy.identity import Caller
from corral.runtime.questions import Questions
from corral.runtime.runtime import Runtime
from corral.runtime.timeline import NewRow, TimelineRow
from corral.runtime.workflows import Workflows
from corral.store.tables import utcnow
from corral.strict_json import JsonRefused

__all__ = ["ADMIN", "Channels", "Received"]

log = logging.getLogger("corral.channels")


@dataclass(frozen=True, slots=True, kw_only=True)
class Received:
    """The HTTP answer to an inbound request."""

    status: int
    body: dict[str, Any] = field(default_factory=dict)


def credential_name(connection: str, field_name: str) -> str:
    """The credential holding one secret field of a connection."""
    return f"channel-{connection}-{field_name}"


class Channels:
    """The channels service; one per platform, provided by the built-in package."""

    def __init__(
        self,
        runtime: Runtime,
        credentials: CredentialStore,
        *,
        questions: Questions | None = None,
        workflows: Workflows | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.rt = runtime
        self.kernel = runtime.kernel
        self.credentials = credentials
        self.store = ChannelStore(self.kernel.sessions)
        settings = self.kernel.settings
        self.vendors: dict[str, Vendor] = {
            "telegram": Telegram(settings.telegram_api_url),
            "slack": Slack(settings.slack_api_url),
            "webhook": GenericWebhook(),
        }
        self.relay = Relay(
            self.kernel,
            self.store,
            self.vendors,
            self.secrets,
            questions,
            lambda conversation_id, after: runtime.conversations.rows(conversation_id, after=after),
            add_card=self._add_card,
        )
        self.router = Router(runtime, self.store, self.relay, questions)
        self.decisions = DecisionSurfaces(self.kernel, self.store, self.relay)
        self.pairing = Pairing(self.kernel, self.store, self.relay)
        self.delivery = WorkflowDelivery(runtime, self.store, self.relay, workflows)
        self.flood = FloodGate()
        self.names: set[str] = set()
        """Connected channel names (``connect`` checks against these before writing)."""
        self._clock = clock
        self._polls: dict[str, asyncio.Task[None]] = {}
        self._sweeper: asyncio.Task[None] | None = None
        self.hosting = False
        self._secrets: dict[str, dict[str, str]] = {}

    async def _add_card(self, conversation_id: str, card: dict[str, Any]) -> None:
        await self.rt.append(conversation_id, [NewRow(kind="card", data=card)])

    # -- life cycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Load the connection names and the bound chats."""
        for connection in await self.store.connections():
            self.names.add(connection.name)
        for sender in await self.store.bound():
            assert sender.conversation_id is not None
            self.relay.bound[sender.conversation_id] = Chat(
                connection=sender.connection, chat_id=sender.chat_id, thread=sender.thread
            )

    async def host(self) -> None:
        """This process serves: poll every polling connection (a short CLI command does not,
        so two processes never compete for one bot's updates), and sweep for rows no process
        has sent to their chat yet."""
        self.hosting = True
        for connection in await self.store.connections():
            if self.polls(connection):
                self.start_polling(connection.name)
        self._sweeper = asyncio.create_task(self._sweep_forever(), name="corral-channel-sweep")

    async def _sweep_forever(self) -> None:
        while True:
            try:
                await self.follow_connections()
                await self.relay.sweep()
                await self.decisions.settle()
            except Exception:  # the next sweep tries again
                log.exception("looking for new channels and rows to send to chats failed")
            live = await self.kernel.live_settings()
            await asyncio.sleep(int(live["channels_relay_sweep_ms"]) / 1000)

    async def follow_connections(self) -> None:
        """Take up connections another process made (a CLI ``connect`` while this one
        serves): poll the new polling ones, stop polling removed ones."""
        current = {c.name: c for c in await self.store.connections()}
        for name in set(self.names) - set(current):
            await self.stop_polling(name)
            self._secrets.pop(name, None)
            self.names.discard(name)
        for name, connection in current.items():
            self.names.add(name)
            if self.polls(connection) and name not in self._polls:
                self.start_polling(name)

    def observe_rows(self, conversation_id: str, rows: Sequence[TimelineRow]) -> None:
        """The runtime's row observer. A cluster worker leaves chats to the serving process:
        it need not know every binding, and the rows reach the server through the database
        (its notifications and its sweep)."""
        if not self.rt.cluster_worker:
            self.relay.poke(conversation_id)
            self.decisions.observe(conversation_id, rows)

    async def close(self) -> None:
        """Stop polling and send what is still queued (briefly)."""
        for name in list(self._polls):
            await self.stop_polling(name)
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        await self.decisions.close()
        await self.relay.close()

    @staticmethod
    def polls(connection: ConnectionRecord) -> bool:
        """Whether the connection is read by long polling rather than a webhook."""
        return connection.provider == "telegram" and connection.fields.get("mode") != "webhook"

    def start_polling(self, name: str) -> None:
        """Start the connection's polling task unless it runs."""
        task = self._polls.get(name)
        if task is None or task.done():
            self._polls[name] = asyncio.get_running_loop().create_task(poll(self, name))

    async def stop_polling(self, name: str) -> None:
        """Cancel the connection's polling task, if any."""
        task = self._polls.pop(name, None)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def secrets(self, connection: ConnectionRecord) -> dict[str, str]:
        """The connection's secret fields, read from the credential store once per process
        (every inbound request and outbound message needs them; connect and disconnect
        renew the cache, the only ways the platform changes them)."""
        cached = self._secrets.get(connection.name)
        if cached is not None:
            return cached
        found: dict[str, str] = {}
        for spec in self.vendors[connection.provider].fields:
            if not spec.secret:
                continue
            value = await self.credentials.lookup(
                credential_name(connection.name, spec.name), user_id=connection.owner_id
            )
            if value is not None:
                found[spec.name] = value
        self._secrets[connection.name] = found
        return found

    # -- inbound ----------------------------------------------------------------------------

    async def receive(self, name: str, headers: Mapping[str, str], body: bytes) -> Received:
        """Handle one inbound request for connection ``name``; see the module docstring."""
        connection = await self.store.connection(name)
        if connection is None:
            return Received(status=404, body={"detail": f"no channel named {name!r}"})
        vendor = self.vendors[connection.provider]
        lowered = {k.lower(): v for k, v in headers.items()}
        try:
            parsed = vendor.parse(lowered, body, await self.secrets(connection), self._clock())
        except BadSignature as exc:
            return Received(status=401, body={"detail": f"{exc}; nothing was stored"})
        except JsonRefused as exc:
            return Received(status=400, body={"detail": f"{exc}; nothing was stored"})
        if parsed.answer is not None:
            return Received(status=200, body=parsed.answer)
        for event in parsed.events:
            await self.handle(connection, event)
        if parsed.events:
            await self.store.note(name, last_inbound_at=utcnow())
        return Received(status=200, body={"ok": True})

    async def handle(self, connection: ConnectionRecord, event: Inbound) -> None:
        """One event, once: idempotency, flood limit, pairing, then the router."""
        if not event.chat_id or not event.sender_id:
            return
        if not await self.store.first_sight(connection.name, event.event_id):
            return
        chat = Chat(connection=connection.name, chat_id=event.chat_id, thread=event.thread)
        if event.ack_id and connection.provider == "telegram":
            await self._ack(connection, event.ack_id)
        live = await self.kernel.live_settings()
        admitted, warn = self.flood.admit(
            connection.name, event.chat_id, int(live["channels_flood_per_minute"])
        )
        if not admitted:
            if warn:
                self.relay.say(chat, "Too many messages from this chat; wait a minute.")
            return
        sender = await self.store.sender(connection.name, event.sender_id, event.chat_id)
        if sender is not None and sender.status == "rejected":
            return
        if sender is None or sender.status == "pending":
            ttl = int(live["channels_pairing_code_ttl_s"])
            pending, _ = await self.store.pending(
                connection.name, event.sender_id, event.chat_id, event.sender_name, ttl
            )
            minutes = max(1, round((pending.code_expires_at - utcnow()).total_seconds() / 60))
            self.relay.say(
                chat,
                f"This chat is not paired yet. Your pairing code is {pending.code} (valid for "
                f"{minutes} min); ask the owner of this connection to approve it. Nothing you "
                "send reaches an agent until then.",
            )
            return
        await self.router.route(connection, sender, event)

    async def _ack(self, connection: ConnectionRecord, ack_id: str) -> None:
        vendor = self.vendors["telegram"]
        assert isinstance(vendor, Telegram)
        with contextlib.suppress(Exception):  # an unanswered press only spins a while
            await vendor.call(
                await self.poster(connection),
                await self.secrets(connection),
                "answerCallbackQuery",
                {"callback_query_id": ack_id},
            )

    async def poster(self, connection: ConnectionRecord, *, timeout_ms: int = 30_000) -> Poster:
        """A poster allowed to reach only the connection's vendor host."""
        web = self.kernel.services.web
        if web is None:
            raise UsageError("no web access is installed, so channels cannot reach vendors")
        vendor = self.vendors[connection.provider]
        url = vendor.api_url(connection.fields, await self.secrets(connection))
        live = await self.kernel.live_settings()
        return vendor_poster(web.fetcher(live), live, url, timeout_ms=timeout_ms)

    # -- notifications ----------------------------------------------------------------------

    async def notifications(self, user_id: str, enabled: bool | None = None) -> dict[str, Any]:
        """Whether ``user_id`` is told of their new pending decisions in the chats they are
        paired in (set first when ``enabled`` is given), and those chats."""
        if enabled is not None:
            await self.relay.decision_messages.set_notify(user_id, enabled)
        chats = [
            {"connection": s.connection, "chat_id": s.chat_id, "sender": s.sender_name}
            for s in await self.store.senders(status="approved")
            if s.user_id == user_id
        ]
        return {"notify": await self.relay.decision_messages.notify(user_id), "paired_chats": chats}

    # -- connections ------------------------------------------------------------------------

    async def connect(
        self, name: str, provider: str, fields: Mapping[str, str], owner: Caller
    ) -> ConnectionRecord:
        """Store the secrets as credentials, the rest as the connection, then register the
        webhook or start polling; a vendor refusing the registration undoes it all."""
        vendor = self.vendors[provider]
        self._secrets.pop(name, None)
        public = {k: v for k, v in fields.items() if not _is_secret(vendor, k)}
        given = {k: v for k, v in fields.items() if _is_secret(vendor, k)}
        if provider == "telegram" and "webhook_secret" not in given:
            given["webhook_secret"] = secrets.token_urlsafe(32)
        for key, value in given.items():
            await self.credentials.set(
                credential_name(name, key), value, user_id=owner.user_id, provider=f"channel:{name}"
            )
        connection = await self.store.add_connection(name, provider, owner.user_id, public)
        self.names.add(name)
        try:
            await self._register(connection)
        except SendFailed as exc:
            await self.disconnect(name)
            raise InvalidArguments(
                f"the {provider} channel {name!r} was not connected: {exc}"
            ) from None
        except BaseException:
            await self.disconnect(name)
            raise
        return connection

    async def _register(self, connection: ConnectionRecord) -> None:
        """Check the vendor takes the credentials, then register the webhook or polling."""
        if connection.provider == "webhook":
            return  # the integration's receiver has nothing to check it by
        secrets_ = await self.secrets(connection)
        poster = await self.poster(connection)
        vendor = self.vendors[connection.provider]
        if isinstance(vendor, Telegram | Slack):
            await vendor.verify(poster, secrets_)
        if connection.provider != "telegram":
            return
        assert isinstance(vendor, Telegram)
        if self.polls(connection):
            await vendor.call(poster, secrets_, "deleteWebhook", {"drop_pending_updates": False})
            if self.hosting:
                self.start_polling(connection.name)
            return
        url = connection.fields["public_url"].rstrip("/") + f"/channels/{connection.name}/inbound"
        await vendor.call(
            poster,
            secrets_,
            "setWebhook",
            {
                "url": url,
                "secret_token": secrets_["webhook_secret"],
                "allowed_updates": ["message", "callback_query"],
            },
        )

    async def disconnect(self, name: str) -> None:
        """Stop polling, unregister the webhook (best effort), forget the secrets, bindings
        and seen events; the conversations stay."""
        connection = await self.store.connection(name)
        await self.stop_polling(name)
        if connection is None:
            self.names.discard(name)
            return
        if connection.provider == "telegram" and not self.polls(connection):
            vendor = self.vendors["telegram"]
            assert isinstance(vendor, Telegram)
            with contextlib.suppress(Exception):
                await vendor.call(
                    await self.poster(connection),
                    await self.secrets(connection),
                    "deleteWebhook",
                    {},
                )
        for spec in self.vendors[connection.provider].fields:
            if spec.secret:
                await self.credentials.remove(
                    credential_name(name, spec.name), user_id=connection.owner_id
                )
        for conversation_id, chat in list(self.relay.bound.items()):
            if chat.connection == name:
                del self.relay.bound[conversation_id]
        await self.store.remove_connection(name)
        self._secrets.pop(name, None)
        self.flood.forget(name)
        self.names.discard(name)

    async def check(self, name: str) -> dict[str, Any]:
        """Local state of a connection: never a secret value."""
        connection = await self.store.connection(name)
        if connection is None:
            return {"state": "absent"}
        senders = await self.store.senders(connections=[name])
        return {
            "state": connection.state,
            "provider": connection.provider,
            "mode": _mode(connection),
            "inbound": f"/channels/{name}/inbound",
            "polling": name in self._polls and not self._polls[name].done(),
            "lastInboundAt": _iso(connection.last_inbound_at),
            "lastError": connection.last_error or None,
            "lastErrorAt": _iso(connection.last_error_at),
            "sent": connection.sent,
            "retries": connection.retries,
            "failures": connection.failures,
            "undelivered": connection.undelivered,
            "pendingPairings": sum(1 for s in senders if s.status == "pending"),
            "pairedSenders": sum(1 for s in senders if s.status == "approved"),
        }

    async def fields_view(self, connection: ConnectionRecord) -> list[dict[str, Any]]:
        """Each field the vendor knows, with ``hasValue`` (secret values never shown)."""
        secrets_ = await self.secrets(connection)
        return [
            {
                "name": spec.name,
                "secret": spec.secret,
                "hasValue": (spec.name in secrets_)
                if spec.secret
                else bool(connection.fields.get(spec.name)),
            }
            for spec in self.vendors[connection.provider].fields
        ]

    def descriptors(self) -> list[dict[str, Any]]:
        """What can be connected: each vendor with the names of its fields."""
        return [
            {
                "provider": vendor.provider,
                "fields": [
                    {
                        "name": spec.name,
                        "secret": spec.secret,
                        "required": spec.required,
                        "description": spec.description,
                    }
                    for spec in vendor.fields
                ]
                + [
                    {"name": n, "secret": False, "required": False, "description": d}
                    for n, d in _COMMON_FIELDS.items()
                ],
                "buttons": vendor.has_buttons,
            }
            for vendor in self.vendors.values()
        ]


_COMMON_FIELDS = {
    "agent": "the agent paired senders talk to (default: the default agent)",
    "model": "the model for this channel's conversations (default: the agent's)",
}


def _is_secret(vendor: Vendor, name: str) -> bool:
    return any(spec.name == name and spec.secret for spec in vendor.fields)


def _mode(connection: ConnectionRecord) -> str:
    if connection.provider == "telegram":
        return "polling" if Channels.polls(connection) else "webhook"
    return "webhook"


def _iso(moment: Any) -> str | None:
    return moment.isoformat() if moment is not None else None


def public_fields(vendor: Vendor) -> frozenset[str]:
    """Every field name a connection of ``vendor`` may be given."""
    return frozenset(s.name for s in vendor.fields) | frozenset(_COMMON_FIELDS)
