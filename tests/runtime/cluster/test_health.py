"""`/health` on a cluster reports the queue and the live workers, and is degraded while
runs sit queued with no worker to advance them."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any

import httpx

import corral
from corral.server import create_app
from tests.runtime.cluster.conftest import Cluster, eventually


async def test_health_is_degraded_while_runs_wait_with_no_worker(own_cluster: Cluster) -> None:
    cluster = own_cluster
    model = cluster.script({"text": "Done."})
    async with corral.open(cluster.data_dir) as platform:
        transport = httpx.ASGITransport(app=create_app(platform))
        async with httpx.AsyncClient(transport=transport, base_url="http://corral.test") as http:
            idle = (await http.get("/health")).json()
            assert idle["status"] == "ok"
            assert idle["cluster"]["queued"] == 0 and idle["cluster"]["live_workers"] == 0

            run = await platform.runtime.start_chat("wait", model=model)
            waiting = (await http.get("/health")).json()
            assert waiting["status"] == "degraded"
            assert waiting["cluster"]["queued"] == 1
            assert waiting["cluster"]["live_workers"] == 0
            assert "start `corral worker`" in waiting["cluster"]["problem"]
            doctor = await asyncio.to_thread(_doctor, cluster)
            assert doctor.returncode == 1, doctor.stderr
            report = json.loads(doctor.stdout)["cluster"]
            assert report["health"]["status"] == "degraded"
            assert report["health"]["queued"] == 1 and report["health"]["live_workers"] == 0
            connections = report["connections"]
            assert connections["per_process"] == 15 + (10 + 8) + 1  # worker_concurrency 10
            assert connections["max_connections"] > 0

            cluster.start_worker()
            settled = await asyncio.wait_for(platform.runtime.wait_run(run.id), 120)
            assert settled.status == "finished", cluster.logs()

            async def healthy() -> dict[str, Any] | None:
                body: dict[str, Any] = (await http.get("/health")).json()
                return body if body["cluster"]["live_workers"] == 1 else None

            after = await eventually(healthy)
    assert after["status"] == "ok" and after["cluster"]["queued"] == 0


def _doctor(cluster: Cluster) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    return subprocess.run(
        [sys.executable, "-m", "corral", "--data-dir", str(cluster.data_dir), "doctor", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
