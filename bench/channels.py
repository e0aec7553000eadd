"""Inbound-to-outbound latency of a one-turn scripted reply through Telegram, against the
same turn through ``platform.chat``, in one run.

    .venv/bin/python bench/channels.py [--messages N] [--runs 3]

A loopback server speaks the Bot API (``sendMessage``, ``setWebhook``); the platform may
reach it only through the test allowance. Each Telegram message is a webhook POST (secret
token checked, idempotency, flood limit, pairing lookup, the turn, the relay, MarkdownV2,
the hardened fetch to the "vendor") timed until ``sendMessage`` arrives at the server. The
baseline is ``platform.chat`` on a conversation with the same scripted model. The target:
the channel path adds less than 50 ms a message over the baseline's median.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import ip_network
from pathlib import Path
from typing import Any

import httpx

import corral
from corral.channels import Channels
from corral.server import create_app
from corral.tools.services import Services
from corral.web.access import WebAccess
from corral.web.fetch import AddressRules
from outcome import Figure, finish

TOKEN = "1:BENCH"
TARGET_EXTRA_MS = 50.0


class _Bot(ThreadingHTTPServer):
    daemon_threads = True
    replies: list[str]
    arrived: threading.Condition


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Bot

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        if self.path.endswith("/sendMessage"):
            with self.server.arrived:
                self.server.replies.append(body["text"])
                self.server.arrived.notify_all()
        data = b'{"ok":true,"result":true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _update(update_id: int, text: str) -> dict[str, Any]:
    return {
        "update_id": update_id,
        "message": {
            "message_id": update_id,
            "from": {"id": 42, "first_name": "B"},
            "chat": {"id": 42, "type": "private"},
            "date": 0,
            "text": text,
        },
    }


async def one_run(messages: int) -> tuple[list[float], list[float]]:
    bot = _Bot(("127.0.0.1", 0), _Handler)
    bot.replies, bot.arrived = [], threading.Condition()
    threading.Thread(target=bot.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    port = bot.server_address[1]
    web = WebAccess(addresses=AddressRules.unsafe_allowing(ip_network("127.0.0.0/8")))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "script.json"
            script.write_text(json.dumps({"turns": [{"text": "pong"}], "after_end": "repeat_last"}))
            model = f"script:{script}"
            async with corral.open(
                Path(tmp) / "data",
                services=Services(web=web),
                telegram_api_url=f"http://127.0.0.1:{port}",
            ) as platform:
                await platform.admin.set_live("web_allowed_ports", str(port))
                await platform.admin.set_live("channels_flood_per_minute", 100_000)
                added = await platform.call_tool(
                    "connect",
                    {
                        "add": [
                            {
                                "kind": "channel",
                                "name": "tg",
                                "provider": "telegram",
                                "secret": TOKEN,
                                "fields": {
                                    "mode": "webhook",
                                    "public_url": "https://bench.example",
                                    "model": model,
                                },
                            }
                        ]
                    },
                )
                assert not added.is_error, added.text
                service = platform.services.require(Channels)
                owner = await platform.caller()
                secret = await service.secrets(await service.store.connection("tg"))  # type: ignore[arg-type]
                headers = {"X-Telegram-Bot-Api-Secret-Token": secret["webhook_secret"]}
                app = create_app(platform)
                async with httpx.AsyncClient(
                    transport=httpx.ASGITransport(app=app), base_url="http://b"
                ) as http:
                    await http.post("/channels/tg/inbound", json=_update(1, "hi"), headers=headers)
                    await service.relay.drained()
                    code = bot.replies[-1].split("pairing code is ")[1].split(" ")[0]
                    await service.pairing.approve(code, owner)
                    await service.relay.drained()

                    async def through_telegram(i: int) -> float:
                        seen = len(bot.replies)
                        started = time.perf_counter()
                        await http.post(
                            "/channels/tg/inbound",
                            json=_update(10 + i, f"ping {i}"),
                            headers=headers,
                        )

                        def arrived() -> None:
                            with bot.arrived:
                                bot.arrived.wait_for(lambda: len(bot.replies) > seen, 30)

                        await asyncio.to_thread(arrived)
                        elapsed = time.perf_counter() - started
                        pairing = await service.pairing.pairings(owner, status="approved")
                        await platform.runtime.wait_idle(pairing[0].conversation_id or "")
                        return elapsed

                    conversation = await platform.runtime.start_conversation(model=model)

                    async def through_chat(i: int) -> float:
                        started = time.perf_counter()
                        turn = await platform.chat(f"ping {i}", conversation_id=conversation.id)
                        assert turn.text == "pong", turn.text
                        return time.perf_counter() - started

                    for i in range(3):  # warm both paths
                        await through_telegram(i)
                        await through_chat(i)
                    channel, chat = [], []
                    for i in range(3, 3 + messages):
                        channel.append(await through_telegram(i))
                        chat.append(await through_chat(i))
                    return channel, chat
    finally:
        bot.shutdown()
        bot.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=30)
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    channel_medians, chat_medians = [], []
    for _ in range(options.runs):
        channel, chat = asyncio.run(one_run(options.messages))
        channel_medians.append(statistics.median(channel) * 1000)
        chat_medians.append(statistics.median(chat) * 1000)
    print(f"messages per path and run: {options.messages} x {options.runs} runs")
    for name, values in (("telegram path", channel_medians), ("platform.chat", chat_medians)):
        middle = statistics.median(values)
        print(f"{name:14} per-run medians: min {min(values):7.2f} ms  median {middle:7.2f} ms")
    ours, base = statistics.median(channel_medians), statistics.median(chat_medians)
    finish(
        "channels",
        [
            Figure(name="platform.chat turn", value=base, unit="ms"),
            Figure(
                name="telegram inbound→sendMessage",
                value=ours,
                unit="ms",
                baseline=base,
                target=f"< +{TARGET_EXTRA_MS:.0f} ms",
                met=ours - base < TARGET_EXTRA_MS,
            ),
        ],
    )


if __name__ == "__main__":
    main()
