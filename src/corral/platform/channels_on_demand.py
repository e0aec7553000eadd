"""The channels service, built when this process first needs it.

The channels family (vendors, relay, pairing, decision surfaces, delivery, web fetching for
the vendors' APIs) is a fifth of what opening the platform imports. While no channel is
connected, the service holds nothing (no names, no bound chat), so a process that opened
then and does not serve builds it only when something asks for it: the service itself
(``services.get(Channels)``, the ``channel`` kind of ``connect``), a waiting or decided card
(whose person may have a chat paired since, elsewhere), a workflow run's end (its delivery
targets) or serving (which polls and sweeps). Built then, it is what it would have been had
it been built at open: started on no connection, changed since only through itself. With a
channel connected at open, it is built and started at open, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from corral.packages.core.connect_channel import ChannelConnect
from corral.tools.services import Deferred, service_key

if TYPE_CHECKING:
    from corral.channels import ChannelKind, Channels
    from corral.connect import CredentialStore
    from corral.runtime.questions import Questions
    from corral.runtime.runs import RunRecord
    from corral.runtime.runtime import Runtime
    from corral.runtime.timeline import TimelineRow
    from corral.runtime.workflows import Workflows

__all__ = ["ChannelsOnDemand"]

_DECISION_CARDS = frozenset({"waiting", "decided", "answered"})
"""The cards the decision surfaces act on (notify a person, settle the messages sent)."""

_ANY_CONNECTION = text("SELECT 1 FROM channel_connections LIMIT 1")
"""Whether a channel is connected, without loading the channel tables' models."""


class ChannelsOnDemand:
    """The channels service and its registrations on the runtime, built on first need."""

    def __init__(
        self,
        runtime: Runtime,
        credentials: CredentialStore,
        *,
        questions: Questions,
        workflows: Callable[[], Workflows],
    ) -> None:
        self._runtime = runtime
        self._credentials = credentials
        self._questions = questions
        self._workflows = workflows
        self._channels = Deferred(self._build_channels)
        self._kind = Deferred(self._build_kind)

    @property
    def built(self) -> Channels | None:
        """The service, if this process built it."""
        return self._channels.built

    def channels(self) -> Channels:
        """The service, built now if it was not yet."""
        return self._channels.value()

    def _build_channels(self) -> Channels:
        from corral.channels import Channels

        return Channels(
            self._runtime,
            self._credentials,
            questions=self._questions,
            workflows=self._workflows(),
        )

    def _build_kind(self) -> ChannelKind:
        from corral.channels import ChannelKind

        return ChannelKind(self.channels())

    def deferred(self) -> dict[str, Deferred[Any]]:
        """The services, for :attr:`Services.deferred`: the channels and their ``connect``
        kind (one object for ChannelKind and ChannelConnect)."""
        return {
            "corral.channels.service.Channels": self._channels,
            "corral.channels.connect_kind.ChannelKind": self._kind,
            service_key(ChannelConnect): self._kind,
        }

    # -- the runtime's hooks ----------------------------------------------------------------

    def observe_rows(self, conversation_id: str, rows: Sequence[TimelineRow]) -> None:
        if self.built is None and not any(_decision_card(row) for row in rows):
            return  # no chat is bound here: the relay has nothing to send
        self.channels().observe_rows(conversation_id, rows)

    def poke(self, conversation_id: str) -> None:
        channels = self.built
        if channels is not None:  # else no chat is bound here
            channels.relay.poke(conversation_id)

    async def deliver_workflow_run(self, run: RunRecord, status: str) -> None:
        if self.built is None and run.kind != "workflow":
            return
        await self.channels().delivery.deliver_workflow_run(run, status)

    async def host(self) -> None:
        await self.channels().host()

    async def start(self) -> None:
        """At open: build and start the service if a channel is connected."""
        async with self._runtime.kernel.sessions() as session:
            connected = (await session.execute(_ANY_CONNECTION)).first() is not None
        if connected:
            await self.channels().start()

    async def close(self) -> None:
        channels = self.built
        if channels is not None:
            await channels.close()


def _decision_card(row: TimelineRow) -> bool:
    return row.kind == "card" and row.data.get("card") in _DECISION_CARDS
