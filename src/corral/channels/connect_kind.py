"""The ``channel`` kind of ``connect``: checks before any write, then the steps, as projections.

``add`` takes ``provider`` (telegram, slack or webhook), ``fields`` (secret and public ones
by the names ``list`` shows) and optionally ``secret`` (the vendor's first secret field);
secrets are stored as the owner's credentials and never echoed. ``remove`` is a disconnect;
``check`` reports local state; ``list`` shows the connections with ``hasValue`` per field
and the descriptors of what can be connected.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from corral.channels.service import ADMIN, Channels, public_fields
from corral.errors import FeatureMissing, InvalidArguments
from corral.packages.core.connect_channel import ChannelConnect
from corral.policy.identity import Caller

__all__ = ["ChannelKind"]

_NAME_MAX = 40


def _url(value: str, what: str, *, schemes: tuple[str, ...] = ("http", "https")) -> None:
    parts = urlsplit(value)
    if parts.scheme not in schemes or not parts.hostname:
        raise InvalidArguments(f"fields.{what} is {value!r}; give an absolute https:// URL")


class ChannelKind(ChannelConnect):
    """What ``connect`` calls for kind ``channel``."""

    def __init__(self, channels: Channels) -> None:
        self.channels = channels

    def check(self, verb: str, name: str, item: Mapping[str, Any], caller: Caller) -> None:
        """Raise for anything wrong with one step; writes nothing."""
        known = name in self.channels.names
        if verb == "authorize":
            raise InvalidArguments(
                "a channel needs no authorization; its senders are paired by code instead"
            )
        if verb in ("remove", "check"):
            if not known:
                raise InvalidArguments(f"no channel named {name!r} is connected")
            return
        if known:
            raise InvalidArguments("a channel by that name is already connected; remove it first")
        if len(name) > _NAME_MAX:
            raise InvalidArguments(f"a channel name has at most {_NAME_MAX} characters")
        unexpected = sorted(set(item) - {"kind", "name", "provider", "fields", "secret"})
        if unexpected:
            raise InvalidArguments(f"a channel takes no {unexpected}")
        provider = str(item.get("provider", ""))
        vendor = self.channels.vendors.get(provider)
        if vendor is None:
            known_ = ", ".join(sorted(self.channels.vendors))
            raise InvalidArguments(f"'provider' is {provider!r}; use one of {known_}")
        fields = self.fields_of(item)
        unknown = sorted(set(fields) - public_fields(vendor))
        if unknown:
            raise InvalidArguments(
                f"unknown fields {unknown} for {provider}; `connect list channel` names them"
            )
        missing = [
            s.name for s in vendor.fields if s.required and not fields.get(s.name, "").strip()
        ]
        if missing:
            raise InvalidArguments(f"{provider} needs fields {missing}")
        if (fields.get("model") or fields.get("agent")) and not caller.grants.has(ADMIN):
            raise FeatureMissing(
                f"choosing a channel's agent or model needs feature {ADMIN!r}",
                data={"features": [ADMIN]},
            )
        mode = fields.get("mode", "polling")
        if provider == "telegram":
            if mode not in ("polling", "webhook"):
                raise InvalidArguments(f"fields.mode is {mode!r}; use 'polling' or 'webhook'")
            if mode == "webhook":
                if not fields.get("public_url"):
                    raise InvalidArguments("webhook mode needs fields.public_url")
                _url(fields["public_url"], "public_url", schemes=("https",))  # Telegram's rule
        if provider == "webhook":
            _url(fields["outbound_url"], "outbound_url")

    @staticmethod
    def fields_of(item: Mapping[str, Any]) -> dict[str, str]:
        """The step's fields, with ``secret`` as the vendor's first secret field."""
        fields = {str(k): str(v) for k, v in dict(item.get("fields") or {}).items()}
        secret = item.get("secret")
        if secret:
            provider = str(item.get("provider", ""))
            first = "signing_secret" if provider == "webhook" else "bot_token"
            fields.setdefault(first, str(secret))
        return fields

    async def apply(
        self, verb: str, name: str, item: Mapping[str, Any], caller: Caller
    ) -> dict[str, Any]:
        """Run one checked step; returns its projection."""
        if verb == "add":
            added = await self.channels.connect(
                name, str(item["provider"]), self.fields_of(item), caller
            )
            state = await self.channels.check(name)
            applied = {
                "provider": added.provider,
                "fields": await self.channels.fields_view(added),
                **{k: state[k] for k in ("state", "mode", "inbound")},
                "pairing": "unknown senders get a code; approve it with `corral channels "
                "pairing approve CODE`",
            }
            if state["mode"] == "polling":
                applied["polling"] = state["polling"]
                if not state["polling"]:
                    applied["note"] = (
                        "this process does not serve: a running `corral serve` starts "
                        "polling this bot within channels_relay_sweep_ms (or when it starts)"
                    )
            return applied
        connection = await self.channels.store.connection(name)
        if connection is None:
            return {"state": "absent"}
        if verb == "remove":
            if connection.owner_id != caller.user_id and not caller.grants.has(ADMIN):
                raise FeatureMissing(
                    f"disconnecting another user's channel needs feature {ADMIN!r}",
                    data={"features": [ADMIN]},
                )
            await self.channels.disconnect(name)
            return {"state": "disconnected"}
        return await self.channels.check(name)

    async def list(self, caller: Caller) -> dict[str, Any]:
        """The connections (with ``hasValue`` per field) and the descriptors."""
        rows = []
        for connection in await self.channels.store.connections():
            rows.append(
                {
                    "name": connection.name,
                    "provider": connection.provider,
                    "state": connection.state,
                    "mine": connection.owner_id == caller.user_id,
                    "fields": await self.channels.fields_view(connection),
                }
            )
        return {"rows": rows, "descriptors": self.channels.descriptors()}
