"""The channels service is built when first needed (issue 39, item 3): not at open while no
channel is connected, at open once one is; on its first lookup, on a decision card, and
always the same object behind Channels, ChannelKind and ChannelConnect."""

from __future__ import annotations

from pathlib import Path

import pytest

import corral
from corral.channels import ChannelKind, Channels
from corral.packages.core.connect_channel import ChannelConnect
from corral.platform import Platform
from corral.runtime.timeline import NewRow
from corral.tools.services import Deferred, Services, ServicesConflict, service_key


def deferred_channels(platform: Platform) -> Deferred[Channels]:
    return platform.services.deferred[service_key(Channels)]


async def test_no_channel_connected_means_no_channels_built_until_asked(data_dir: Path) -> None:
    async with corral.open(data_dir) as platform:
        assert deferred_channels(platform).built is None
        assert platform.services.deferred[service_key(ChannelKind)].built is None
        channels = platform.services.require(Channels)
        assert deferred_channels(platform).built is channels
        assert platform.services.require(Channels) is channels
        kind = platform.services.require(ChannelKind)
        assert platform.services.get(ChannelConnect) is kind and kind.channels is channels
        assert channels.names == set() and channels.relay.bound == {}


async def test_a_connected_channel_is_built_and_started_at_open(data_dir: Path) -> None:
    async with corral.open(data_dir) as platform:
        added = await platform.call_tool(
            "connect",
            {
                "add": [
                    {
                        "kind": "channel",
                        "name": "hook",
                        "provider": "webhook",
                        "secret": "s" * 32,
                        "fields": {"outbound_url": "http://127.0.0.1:9/in"},
                    }
                ]
            },
        )
        assert not added.is_error, added.text
    async with corral.open(data_dir) as platform:
        channels = deferred_channels(platform).built
        assert channels is not None and channels.names == {"hook"}
    async with corral.open(data_dir) as platform:
        removed = await platform.call_tool(
            "connect", {"remove": [{"kind": "channel", "name": "hook"}]}
        )
        assert not removed.is_error, removed.text
    async with corral.open(data_dir) as platform:
        assert deferred_channels(platform).built is None


async def test_a_decision_card_builds_the_channels(data_dir: Path) -> None:
    async with corral.open(data_dir) as platform:
        info = await platform.runtime.start_conversation(title="cards")
        await platform.runtime.append(info.id, [NewRow(kind="user_message", data={"text": "x"})])
        assert deferred_channels(platform).built is None  # nothing a chat could be sent
        card = {"card": "waiting", "wait": {"kind": "approval", "id": "ap_x"}}
        await platform.runtime.append(info.id, [NewRow(kind="card", data=card)])
        channels = deferred_channels(platform).built
        assert channels is not None
        await channels.decisions.drained()


def test_deferred_services_are_found_by_type_built_once_and_overridden() -> None:
    made: list[int] = []

    class Greeter:
        pass

    def build() -> Greeter:
        made.append(1)
        return Greeter()

    services = Services(deferred={service_key(Greeter): Deferred(build)})
    assert made == []
    greeter = services.require(Greeter)
    assert services.get(Greeter) is greeter and made == [1]
    mine = Greeter()
    assert Services(extra={Greeter: mine}).over(services).get(Greeter) is mine
    with pytest.raises(ServicesConflict, match="Greeter"):
        services.joined(Services(extra={Greeter: mine}))
    with pytest.raises(ServicesConflict, match="Greeter"):
        services.joined(Services(deferred={service_key(Greeter): Deferred(build)}))
    assert Services().joined(services).get(Greeter) is greeter
