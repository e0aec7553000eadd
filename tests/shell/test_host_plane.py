"""The host plane: a real broker on a Unix socket, its allowlist, exec.host, and Stop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import corral
from corral import Cancellation
from corral.platform import Platform
from corral.shell.host.broker import BrokerConfig, HostBroker
from corral.shell.host.client import HostBrokerClient
from tests.shell.conftest import needs_bwrap, stop_when


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[HostBroker]:
    root = tmp_path / "hostroot"
    root.mkdir()
    config = BrokerConfig(
        socket=tmp_path / "broker.sock",
        allow=frozenset({"echo", "sleep", "touch", "cat", "pwd"}),
        roots=(str(root),),
        max_timeout=30,
    )
    host = HostBroker(config)
    server = await host.serve()
    async with server:
        yield host
        await host.close()


@pytest.fixture
async def hosted(data_dir: Path, broker: HostBroker) -> AsyncIterator[Platform]:
    async with corral.open(data_dir, host_broker_socket=broker.config.socket) as platform:
        root = broker.config.roots[0]
        await platform.admin.add_source("machine", root, connector="host")
        await platform.admin.grant_source(
            "machine", principal_kind="role", principal="owner", rights="rwx"
        )
        yield platform


async def test_a_host_source_runs_through_the_broker(hosted: Platform, broker: HostBroker) -> None:
    result = await hosted.call_tool(
        "execute", {"command": "pwd; echo hello from the host", "cwd": "machine://"}
    )
    assert result.status == "ok", result.text
    assert result.data is not None
    assert result.data["plane"] == "host" and result.data["confinement"] == "host-broker:unconfined"
    assert result.data["host"] == {"roots": list(broker.config.roots), "timeout": 30}
    assert "hello from the host" in result.text and broker.config.roots[0] in result.text
    assert (broker.config.socket.stat().st_mode & 0o777) == 0o600


async def test_the_broker_allowlist_and_the_exec_host_grant(
    hosted: Platform, broker: HostBroker
) -> None:
    refused = await hosted.call_tool("execute", {"command": "ls -la", "cwd": "machine://"})
    assert refused.error_code == "policy_denied" and refused.data is not None
    error = refused.data["error"]
    assert (error["guard"], error["rule"], error["word"]) == ("host_broker", "allowlist", "ls")
    wrapped = await hosted.call_tool(
        "execute", {"command": "echo ok | tr o 0", "cwd": "machine://"}
    )
    assert wrapped.data is not None and wrapped.data["error"]["word"] == "tr"
    await hosted.identity.create_role("dev", ["core.exec"])
    await hosted.identity.create_user("dana", "dev")
    await hosted.admin.grant_source("machine", principal_kind="role", principal="dev", rights="rwx")
    verdict = await hosted.check_command("echo hi", cwd="machine://", user="dana")
    assert (verdict.guard, verdict.rule, verdict.plane) == ("uri_policy", "host_grant", "host")
    assert "exec.host" in verdict.detail
    no_background = await hosted.call_tool(
        "execute", {"command": "echo hi", "cwd": "machine://", "background": True}
    )
    assert no_background.error_code == "host_background_unavailable"


async def test_stop_only_stops_waiting_and_says_so(hosted: Platform, broker: HostBroker) -> None:
    root = Path(broker.config.roots[0])
    cancellation = Cancellation()
    result = await hosted.call_tool(
        "execute",
        {"command": "echo begun; sleep 1; touch finished.txt", "cwd": "machine://"},
        cancellation=cancellation,
        output=stop_when("begun", cancellation),
    )
    assert result.status == "stopped" and "begun" in result.text
    assert "Stopped waiting only" in result.text and "cannot cancel" in result.text
    assert not (root / "finished.txt").exists()
    await broker.drain()  # the command ran on to its own end on the host
    assert (root / "finished.txt").exists()


async def test_the_connector_decides_the_plane_never_the_name(
    hosted: Platform, broker: HostBroker, tmp_path: Path
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    await hosted.admin.add_source("host-notes", str(notes))  # a local source with a host-ish name
    await hosted.admin.grant_source(
        "host-notes", principal_kind="role", principal="owner", rights="rwx"
    )
    assert (await hosted.check_command("ls", cwd="host-notes://")).plane == "app"
    assert (await hosted.check_command("ls", cwd="machine://")).plane == "host"
    # A bare path owned by both a local and a host source stays in the container.
    root = broker.config.roots[0]
    await hosted.admin.add_source("mirror", root)
    await hosted.admin.grant_source(
        "mirror", principal_kind="role", principal="owner", rights="rwx"
    )
    assert (await hosted.check_command("ls", cwd=root)).plane == "app"
    assert (await hosted.check_command("ls", cwd="machine://")).plane == "host"
    crossing = await hosted.check_command(f"cat {notes}/x.txt", cwd="machine://")
    assert crossing.rule == "other_plane"


async def test_no_broker_means_no_host_plane(data_dir: Path, tmp_path: Path) -> None:
    async with corral.open(data_dir, host_broker_socket=tmp_path / "absent.sock") as platform:
        await platform.admin.add_source("machine", str(tmp_path), connector="host")
        await platform.admin.grant_source(
            "machine", principal_kind="role", principal="owner", rights="rwx"
        )
        result = await platform.call_tool("execute", {"command": "echo hi", "cwd": "machine://"})
    assert result.error_code == "host_unavailable" and "corral host-broker" in result.text


@needs_bwrap
async def test_a_sandboxed_broker_sees_only_its_roots(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "outside.txt").write_text("outside")
    host = HostBroker(
        BrokerConfig(
            socket=tmp_path / "b.sock",
            allow=frozenset({"cat", "echo"}),
            roots=(str(root),),
            sandbox=True,
        )
    )

    async with await host.serve():
        client = HostBrokerClient(tmp_path / "b.sock")
        assert (await client.ping())["confinement"] == "host-broker:bubblewrap"
        outcome = await client.run(
            f"cat {tmp_path}/outside.txt; echo done",
            cwd=str(root),
            limit=10,
            env={},
            capture_limit=10_000,
            stop=asyncio.Event(),
        )
    assert outcome.status == "exited" and "No such file" in outcome.capture.text()
    assert "outside\n" not in outcome.capture.text()
