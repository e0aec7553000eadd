"""Added latency of the egress proxy per HTTPS request, against a direct connection, same run.

    .venv/bin/python bench/egress.py [--requests N] [--runs 3]

An HTTPS server (self-signed, ``openssl``) runs on loopback in a thread of its own; the
proxy (:class:`corral.shell.egress.proxy.EgressProxy`, the very code a shell call gets,
listening on a loopback socket as the bridge's listener) in another. The client makes
``N`` HTTPS requests one after another, each on a fresh connection with its own TLS
handshake (as ``curl`` or ``git`` per invocation do): directly, and through ``CONNECT``
(tunnelled: the policy allows the name, the proxy resolves it through the tests' mapping to
loopback). Runs alternate; min and median of the per-request means are reported. A last
pair of figures is the cost of network mode proxy per shell call (the bridge's python
start-up and the hand-over) against mode off, ``true`` through ``execute``, when
bubblewrap runs here. Terminated figures are the same requests to a domain with a method
rule, so the proxy ends the client's TLS with a leaf of its CA, judges the request and opens
its own TLS upstream (:class:`corral.shell.egress.tls.TlsInterceptor`): two handshakes.
Every figure is informative (the issue sets no target); on a loaded machine each of the
proxy's hops waits for the scheduler, so compare figures of the same run only.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import corral
from corral.shell.egress.ca import CertificateAuthority
from corral.shell.egress.log import CallScope, EgressLog
from corral.shell.egress.policy import egress_policy_for
from corral.shell.egress.proxy import EgressProxy
from corral.shell.egress.tls import TlsInterceptor
from corral.shell.egress.upstream import UpstreamConnector
from corral.web.fetch.addresses import AddressRules
from outcome import Figure, finish, skip

BODY = b"x" * 1024


def _certificate(folder: Path) -> tuple[Path, Path]:
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=api.test", "-addext", "subjectAltName=DNS:api.test",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


async def _serve_https(cert: Path, key: Path) -> None:
    """The server process: answers every request with ``BODY`` and closes."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(BODY)
                + BODY
            )
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=context)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


async def _start_proxy(
    port: int, interceptor: TlsInterceptor | None = None
) -> tuple[EgressProxy, int]:
    entry: dict[str, object] = {"domain": "api.test", "ports": [port]}
    if interceptor is not None:
        entry["methods"] = ["GET"]  # a method rule: the proxy must see inside TLS
    proxy = EgressProxy(
        policy=egress_policy_for({"allowed_domains": [entry]}),
        upstream=UpstreamConnector.unsafe_mapping(
            {"api.test": "127.0.0.1"}, judge=AddressRules().refusal
        ),
        log=EgressLog(CallScope(), limit=0),
        interceptor=interceptor,
    )
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(256)
    await proxy.serve(listener)
    return proxy, listener.getsockname()[1]


async def _request(context: ssl.SSLContext, port: int, proxy_port: int | None) -> None:
    if proxy_port is None:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=context, server_hostname="api.test"
        )
    else:
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy_port)
        writer.write(f"CONNECT api.test:{port} HTTP/1.1\r\nHost: api.test:{port}\r\n\r\n".encode())
        answer = await reader.readuntil(b"\r\n\r\n")
        if b" 200 " not in answer.split(b"\r\n", 1)[0]:
            raise SystemExit(f"the proxy refused: {answer!r}")
        await writer.start_tls(context, server_hostname="api.test")
    writer.write(b"GET / HTTP/1.1\r\nHost: api.test\r\n\r\n")
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise SystemExit(f"unexpected response {head!r}")
    await reader.readexactly(len(BODY))  # by Content-Length, as HTTP clients read
    writer.close()


async def _client(cert: Path, port: int, proxy_port: int | None, n: int) -> None:
    """The client process: prints the mean ms of ``n`` requests, one connection each."""
    context = ssl.create_default_context(cafile=str(cert))
    await _request(context, port, proxy_port)  # warm-up
    started = time.perf_counter()
    for _ in range(n):
        await _request(context, port, proxy_port)
    print((time.perf_counter() - started) / n * 1000)


async def _round(cert: Path, port: int, proxy_port: int | None, n: int) -> float:
    """One client process's mean, run while this loop serves the proxy."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--client", str(cert), str(port), str(proxy_port or 0), str(n),
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, _ = await process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"the client failed ({process.returncode})")
    return float(out.decode().strip().splitlines()[-1])


def _min_and_median(
    name: str, times: list[float], against: list[float] | None = None
) -> list[Figure]:
    """The min and median of ``times`` (ms), each beside the same statistic of ``against``."""
    return [
        Figure(
            name=f"{name} ({label})",
            value=statistic(times),
            unit="ms",
            baseline=None if against is None else statistic(against),
        )
        for label, statistic in (("min", min), ("median", statistics.median))
    ]


async def _shell_calls(calls: int) -> dict[str, list[float]] | None:
    """Ms of each ``execute true`` with network mode proxy and with mode off."""
    if shutil.which("bwrap") is None:
        return None
    with tempfile.TemporaryDirectory(prefix="corral-egress-bench-", dir="/tmp") as folder:
        os.chmod(folder, 0o755)  # the sandbox uid passes through to the drive
        data = Path(folder) / "data"
        async with corral.open(data, sandbox="bubblewrap") as platform:
            from corral.shell.service import ShellService

            service = platform.services.require(ShellService)
            if service.status.tier != "bubblewrap":
                return None
            times: dict[str, list[float]] = {"proxy": [], "off": []}
            policies = {"proxy": {"allowed_domains": ["api.test"]}, "off": {}}
            for _ in range(calls):
                for mode in ("off", "proxy"):
                    await platform.admin.set_live("egress", policies[mode])
                    started = time.perf_counter()
                    result = await platform.call_tool("execute", {"command": "true"})
                    times[mode].append((time.perf_counter() - started) * 1000)
                    if result.data is None or not result.data["network"].startswith(mode):
                        raise SystemExit(f"network mode {mode} did not apply: {result.text}")
            return times


async def measure(requests: int, runs: int, calls: int) -> list[Figure]:
    if shutil.which("openssl") is None:
        skip("egress", "openssl is not installed (the bench makes its own certificate)")
    with tempfile.TemporaryDirectory() as folder:
        cert, key = _certificate(Path(folder))
        server = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--serve", str(cert), str(key),
            stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert server.stdout is not None
        proxies: list[EgressProxy] = []
        ca = CertificateAuthority(Path(folder) / "private")
        # The clients trust the server's certificate and the CA the interceptor mints with.
        trusted = Path(folder) / "trusted.pem"
        trusted.write_bytes(cert.read_bytes() + ca.certificate_pem())
        upstream_tls = ssl.create_default_context(cafile=str(cert))
        try:
            port = int(await server.stdout.readline())  # printed once it listens
            proxy, proxy_port = await _start_proxy(port)
            proxies.append(proxy)
            proxy, terminating_port = await _start_proxy(
                port, TlsInterceptor(ca, upstream_tls=upstream_tls)
            )
            proxies.append(proxy)
            direct: list[float] = []
            tunnelled: list[float] = []
            terminated: list[float] = []
            for _ in range(runs):
                direct.append(await _round(trusted, port, None, requests))
                tunnelled.append(await _round(trusted, port, proxy_port, requests))
                terminated.append(await _round(trusted, port, terminating_port, requests))
        finally:
            for proxy in proxies:
                await proxy.close()
            server.terminate()
            await server.wait()
    figures = [
        *_min_and_median("HTTPS request, direct", direct),
        *_min_and_median("HTTPS request, tunnelled", tunnelled, against=direct),
        *_min_and_median(
            "added by the proxy per request",
            [t - d for t, d in zip(tunnelled, direct, strict=True)],
        ),
        *_min_and_median("HTTPS request, terminated", terminated, against=tunnelled),
        Figure(
            name="added by termination over tunnelling per request (median)",
            value=statistics.median(e - t for e, t in zip(terminated, tunnelled, strict=True)),
            unit="ms",
        ),
    ]
    shell = await _shell_calls(calls) if calls else None
    if shell is not None:
        for kind, pick in (("min", min), ("median", statistics.median)):
            off, with_proxy = pick(shell["off"]), pick(shell["proxy"])
            figures += [
                Figure(name=f"execute true, network off ({kind})", value=off, unit="ms"),
                Figure(
                    name=f"execute true, network proxy ({kind})",
                    value=with_proxy,
                    unit="ms",
                    baseline=off,
                ),
            ]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--calls", type=int, default=10, help="execute calls per mode (0: none)")
    parser.add_argument("--serve", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--client", nargs=4, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve:
        cert, key = (Path(p) for p in options.serve)
        asyncio.run(_serve_https(cert, key))
        return
    if options.client:
        cert_path, port, proxy_port, n = options.client
        asyncio.run(_client(Path(cert_path), int(port), int(proxy_port) or None, int(n)))
        return
    finish("egress", asyncio.run(measure(options.requests, options.runs, options.calls)))


if __name__ == "__main__":
    main()
