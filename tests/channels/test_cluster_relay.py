"""On a cluster the run of a bound chat advances on a `corral worker` process, and its answer
still reaches the chat: the worker leaves chats alone, the serving process hears of the rows
through PostgreSQL's notifications and sends them. A real PostgreSQL server and a real worker."""

from __future__ import annotations

import asyncio

import httpx

import corral
from corral.server import create_app
from corral.tools.services import Services
from corral.web.access import WebAccess
from corral.web.fetch import AddressRules
from tests.channels.conftest import LOOPBACK, tg_message
from tests.channels.test_bound import bound_conversation
from tests.channels.test_telegram import pair, post, webhook_channel
from tests.channels.vendor_servers import FakeTelegram
from tests.runtime.cluster.conftest import Cluster, cluster

__all__ = ["cluster"]  # the session's cluster fixture, shared with tests/runtime/cluster


async def test_a_bound_chats_run_on_a_worker_is_answered_in_the_chat_once(
    cluster: Cluster, telegram: FakeTelegram
) -> None:
    model = cluster.script({"text": "From a worker."})
    web = WebAccess(addresses=AddressRules.unsafe_allowing(LOOPBACK))
    async with corral.open(
        cluster.data_dir, services=Services(web=web), telegram_api_url=telegram.url
    ) as platform:
        await platform.admin.set_live("web_allowed_ports", str(telegram.port))
        await platform.admin.set_live("channels_retry_base_ms", 0)
        # Only the notification can be in time: the sweep runs at start, then in ten minutes.
        await platform.admin.set_live("channels_relay_sweep_ms", 600_000)
        await platform.runtime.host()
        cluster.ensure_workers(1)
        token = await platform.identity.create_token("owner")
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(platform)),
            base_url="http://corral.test",
            headers={"Authorization": f"Bearer {token.token}"},
        ) as http:
            secret = await webhook_channel(platform, telegram, model)
            await pair(platform, http, telegram, secret, "owner")
            await post(http, tg_message(2, "hi"), secret)

            def answered() -> bool:
                return any(m["text"] == "From a worker\\." for m in telegram.sent)

            assert await asyncio.to_thread(telegram.wait_for, answered, 60), cluster.logs()
            conversation_id = await bound_conversation(http)
            (run,) = await platform.runtime.runs.list_runs(conversation_id=conversation_id)
            await platform.admin.set_live("channels_relay_sweep_ms", 2000)
    assert run.worker is not None and run.worker != platform.runtime.worker
    assert [m["text"] for m in telegram.sent].count("From a worker\\.") == 1
