"""What the hardened fetch pipeline costs over plain httpx, against a loopback server.

Prints milliseconds per fetch for: the pipeline (fresh pinned pool per call, as in
production), plain httpx with a fresh client per call, and plain httpx reusing one client;
plus the pipeline's ratio to each, and the cost of parsing and judging URLs alone.

    .venv/bin/python bench/fetch.py [fetches]
"""

from __future__ import annotations

import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import ip_network
from typing import Any

import anyio
import httpx

from corral.web.fetch import AddressRules, Fetcher, FetchPolicy, parse_url
from outcome import Figure, finish

BODY = b"<html><body>" + b"<p>hello</p>" * 2000 + b"</body></html>"
URLS = [
    "https://example.com/a/b?c=d",
    "http://0x7f.1/",
    "http://\uff11\uff12\uff17\uff0e\uff10\uff0e\uff10\uff0e\uff11/",
    "https://b\u00fccher.example/",
    "http://[::ffff:127.0.0.1]/",
]


class _Page(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16  # one write per answer: no delayed-ACK stalls on kept-alive sockets

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


async def _timed(label: str, count: int, fetch_once: Any) -> float:
    await fetch_once()  # warm up
    started = time.perf_counter()
    for _ in range(count):
        await fetch_once()
    per = (time.perf_counter() - started) * 1000 / count
    print(f"{label:<40} {per:8.3f} ms/fetch")
    return per


async def main(count: int) -> list[Figure]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    url = f"http://127.0.0.1:{port}/"
    fetcher = Fetcher(
        FetchPolicy(allowed_ports=frozenset({port})),
        addresses=AddressRules.unsafe_allowing(ip_network("127.0.0.1/32")),
    )

    async def pipeline() -> None:
        assert (await fetcher.fetch(url)).body == BODY

    async def fresh_client() -> None:
        async with httpx.AsyncClient(trust_env=False) as client:
            assert (await client.get(url)).content == BODY

    shared = httpx.AsyncClient(trust_env=False)

    async def reused_client() -> None:
        assert (await shared.get(url)).content == BODY

    try:
        ours = await _timed("pipeline (pinned, per-call pool)", count, pipeline)
        fresh = await _timed("httpx, new client per fetch", count, fresh_client)
        reused = await _timed("httpx, one reused client", count, reused_client)
    finally:
        await shared.aclose()
        server.shutdown()
        server.server_close()
    print(f"ratio pipeline / httpx new client: {ours / fresh:.2f}")
    print(f"ratio pipeline / httpx reused client: {ours / reused:.2f}")

    rounds = 2000
    started = time.perf_counter()
    for _ in range(rounds):
        for item in URLS:
            parse_url(item)
    per = (time.perf_counter() - started) * 1_000_000 / (rounds * len(URLS))
    print(f"{'parse_url alone':<40} {per:8.1f} us/url")
    return [
        Figure(name="httpx, one reused client", value=reused, unit="ms"),
        Figure(name="httpx, new client per fetch", value=fresh, unit="ms", baseline=reused),
        Figure(name="pipeline (pinned, per-call pool)", value=ours, unit="ms", baseline=fresh),
        Figure(name="parse_url alone", value=per, unit="µs"),
    ]


if __name__ == "__main__":
    finish("fetch", anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 200))
