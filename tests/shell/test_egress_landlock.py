"""Network mode proxy on the Landlock tier (issue 35): the command shares the host's network,
so its way out is the egress proxy on a loopback port of the host, which its Landlock rules
(ABI 4 ``LANDLOCK_ACCESS_NET_CONNECT_TCP``) let it reach and nothing else over TCP; its
seccomp filter allows TCP sockets only, and TCP bind is refused.

Real processes: the Landlock tier's launcher, ``curl`` and ``python3`` under it, the HTTPS
stand-in ``api.test`` on loopback (only the tests' resolver mapping sends it there).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import select

import corral
from corral.platform import Platform
from corral.runtime.hooks.config import HookHandler
from corral.shell.egress.upstream import UpstreamConnector
from corral.shell.landlock import landlock_abi
from corral.shell.launcher import launcher_argv, with_network
from corral.store.shell_tables import EgressConnection
from corral.web.fetch.addresses import AddressRules
from tests.conftest import FIXTURES
from tests.packages.core.conftest import server_python
from tests.shell.conftest import egress_hook_runner, shells
from tests.shell.test_confinement import UID, _world_folder
from tests.shell.test_egress import FakeNames, Site, site, world

__all__ = ["site", "world"]  # the fixtures, shared with test_egress

pytestmark = [
    pytest.mark.skipif(landlock_abi() < 4, reason="no Landlock network rules in this kernel"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox uid needs root to switch to"),
]

_ATTEMPTS = """
import errno, socket, sys
def attempt(name, call):
    try:
        call()
        print(name, "worked")
    except OSError as exc:
        print(name, "failed", errno.errorcode.get(exc.errno, exc.errno))
def tcp():
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3).close()
def udp():
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", 53))
def bind():
    socket.socket().bind(("127.0.0.1", 0))
def unix():
    socket.socket(socket.AF_UNIX)
attempt("tcp", tcp)
attempt("udp", udp)
attempt("bind", bind)
attempt("unix", unix)
"""


@pytest.fixture
async def landlocked(world: Path, site: Site) -> AsyncIterator[tuple[Platform, Path]]:
    folder = _world_folder("corral-egress-ll-")
    try:
        async with corral.open(folder / "data", sandbox="landlock") as platform:
            service = shells(platform)
            assert service.status.tier == "landlock", service.status.to_json()
            service.enable_egress(
                UpstreamConnector.unsafe_mapping(
                    {"api.test": "127.0.0.1"}, judge=AddressRules().refusal, resolver=FakeNames()
                )
            )
            drive = folder / "data" / "drive"
            drive.mkdir(parents=True, exist_ok=True)
            drive.chmod(0o755)
            os.chown(drive, UID, UID)
            shutil.copy(world / "keys" / "cert.pem", drive / "ca.pem")
            (drive / "ca.pem").chmod(0o644)
            (drive / "attempts.py").write_text(_ATTEMPTS)
            (drive / "attempts.py").chmod(0o644)
            await platform.admin.set_live(
                "egress", {"allowed_domains": [{"domain": "api.test", "ports": [site.tls_port]}]}
            )
            yield platform, drive
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def _execute(platform: Platform, command: str) -> corral.ToolResult:
    return await platform.call_tool("execute", {"command": command, "cwd": "data://"})


async def test_curl_goes_through_the_proxy_and_nothing_else_leaves(
    landlocked: tuple[Platform, Path], site: Site
) -> None:
    platform, _ = landlocked
    through = await _execute(
        platform, f"curl -sS --cacert ca.pem https://api.test:{site.tls_port}/hello.txt"
    )
    assert "hello from api.test" in through.text, through.text
    assert through.data["network"] == "proxy (egress policy)"
    assert through.data["egress"]["allowed"] == 1
    refused = await _execute(platform, f"curl -sS https://nope.test:{site.tls_port}/")
    assert "403" in refused.text, refused.text
    assert refused.data["egress"]["refused_connections"][0]["rule"] == "unmatched"
    # Straight to the stand-in's own port, around the proxy: Landlock refuses the connect.
    direct = await _execute(
        platform, f"curl -sS --noproxy '*' --cacert ca.pem https://127.0.0.1:{site.tls_port}/"
    )
    assert "hello" not in direct.text and through.data["exit_code"] == 0
    assert direct.data["exit_code"] != 0, direct.text
    tried = await _execute(platform, f"python3 attempts.py {site.plain_port}")
    assert "tcp failed EACCES" in tried.text, tried.text
    assert "udp failed EPERM" in tried.text  # seccomp: TCP sockets only
    assert "bind failed EACCES" in tried.text
    assert "unix failed EAFNOSUPPORT" in tried.text


async def test_without_an_allowed_domain_the_landlock_tier_has_no_network(
    landlocked: tuple[Platform, Path], site: Site
) -> None:
    platform, _ = landlocked
    await platform.admin.set_live("egress", {})
    result = await _execute(
        platform, f"curl -sS --cacert ca.pem https://api.test:{site.tls_port}/hello.txt"
    )
    assert result.data["network"] == "off"
    assert "hello" not in result.text and result.data["exit_code"] != 0


async def test_a_command_hook_on_the_landlock_tier_reaches_out_through_the_proxy_only(
    landlocked: tuple[Platform, Path], site: Site
) -> None:
    platform, drive = landlocked
    service = shells(platform)

    runner = egress_hook_runner(platform, drive, UID)
    through = HookHandler(
        kind="command",
        command=f"curl -sS --cacert ca.pem https://api.test:{site.tls_port}/hello.txt",
    )
    got = await runner.run(through, b"{}")
    assert "hello from api.test" in got.stdout, got
    tried = await runner.run(
        HookHandler(kind="command", command=f"python3 attempts.py {site.plain_port}"), b"{}"
    )
    assert "tcp failed EACCES" in tried.stdout, tried  # Landlock: the proxy's port only
    assert "udp failed EPERM" in tried.stdout  # seccomp: TCP sockets only
    assert "bind failed EACCES" in tried.stdout
    assert "unix failed EAFNOSUPPORT" in tried.stdout
    async with platform.kernel.sessions() as session:
        rows = list(await session.scalars(select(EgressConnection)))
    assert [(r.host, r.allowed) for r in rows] == [("api.test", True)]

    await platform.admin.set_live("egress", {})  # no domain allowed: no network at all
    off = HookHandler(
        kind="command",
        command=f"curl -sS --max-time 5 http://127.0.0.1:{site.plain_port}/hello.txt; "
        "echo ${HTTPS_PROXY:-none}",
    )
    alone = await runner.run(off, b"{}")
    assert "none" in alone.stdout and "hello" not in alone.stdout, alone
    await platform.admin.set_live("shell_network", True)
    assert await service.helper_network() is None  # the host's network, as shell calls have


async def test_before_landlock_abi_4_helpers_keep_the_hosts_network_rather_than_fail(
    landlocked: tuple[Platform, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    platform, _ = landlocked
    service = shells(platform)
    held = await service.helper_network()
    assert held is not None  # held on this kernel
    await held.finish()
    monkeypatch.setattr("corral.shell.service.landlock_abi", lambda: 3)
    assert await service.helper_network() is None  # no TCP rules: unheld, but it still runs


async def test_a_stdio_mcp_server_on_the_landlock_tier_reaches_out_through_the_proxy_only(
    landlocked: tuple[Platform, Path], site: Site
) -> None:
    platform, drive = landlocked
    command = [server_python(), str(FIXTURES / "mcp_egress_server.py")]
    added = await platform.call_tool(
        "connect", {"add": [{"kind": "mcp", "name": "out", "command": command}]}
    )
    assert not added.is_error, added.text
    url = f"https://api.test:{site.tls_port}/hello.txt"
    fetched = await platform.call_tool("out_fetch", {"url": url, "cafile": f"{drive}/ca.pem"})
    assert "hello from api.test" in fetched.text, fetched.text
    dialled = await platform.call_tool("out_dial", {"host": "127.0.0.1", "port": site.plain_port})
    assert dialled.text.startswith("blocked: PermissionError"), dialled.text
    await platform.call_tool("connect", {"remove": [{"kind": "mcp", "name": "out"}]})
    async with platform.kernel.sessions() as session:
        rows = list(await session.scalars(select(EgressConnection)))
    assert [(r.host, r.allowed) for r in rows] == [("api.test", True)]


def test_the_launchers_network_option_refuses_a_bad_port_in_one_line() -> None:
    argv = launcher_argv(["true"], uid=UID)
    confined = with_network(argv, 70000)
    done = subprocess.run(confined, capture_output=True, text=True, check=False)
    assert done.returncode == 126
    assert done.stderr.strip().splitlines() == [
        "corral launcher: --net-port takes a TCP port (1-65535)"
    ]
    # The option goes before --uid, whatever wraps it.
    assert with_network(argv, None)[5:8] == ["--no-network", "--uid", str(UID)]
    assert with_network([sys.executable, "-c", "pass"], 80)[5:9] == [
        "--net-port",
        "80",
        "--uid",
        str(os.geteuid()),
    ]
