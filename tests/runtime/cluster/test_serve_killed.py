"""On a cluster an approval answered through `corral serve` is run by a worker: killing
serve right after the answer leaves nothing behind, the run still finishes."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading

import httpx

import corral
from tests.runtime.cluster.conftest import Cluster, call


def _corral(cluster: Cluster, *args: str) -> list[str]:
    return [sys.executable, "-m", "corral", "--data-dir", str(cluster.data_dir), *args]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}


def _serve(
    cluster: Cluster,
) -> tuple[subprocess.Popen[str], str, list[str], threading.Thread]:
    process = subprocess.Popen(
        _corral(cluster, "serve", "--port", "0"),
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    url, seen = None, []
    for line in process.stdout:
        seen.append(line)
        match = re.search(r"web UI: (http://127\.0\.0\.1:\d+)/", line)
        url = match.group(1) if match else url
        if "Application startup complete" in line:
            break
    drain = threading.Thread(target=lambda: seen.extend(process.stdout or ()), daemon=True)
    drain.start()
    assert url, "".join(seen)
    return process, url, seen, drain


def test_sigkill_of_serve_after_the_answer_leaves_the_run_to_finish(
    own_cluster: Cluster,
) -> None:
    cluster = own_cluster
    made = subprocess.run(
        _corral(cluster, "tokens", "create", "owner"),
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    token = made.stdout.strip().splitlines()[-1]
    model = cluster.script(
        {"text": "Needs a yes.", "tool_calls": [call("launch", what="the probe")]},
        {"text": "Launched.", "when_result_contains": "launched the probe"},
    )
    cluster.ensure_workers(1)
    serve, url, seen, drain = _serve(cluster)
    try:
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
            turn = http.post("/chat", json={"message": "launch it", "model": model}).json()
            assert turn["status"] == "parked", (turn, cluster.logs(), "".join(seen))
            approval = turn["waiting"][0]["id"]
            decided = http.post(f"/approvals/{approval}/decision", json={"decision": "approve"})
            assert decided.status_code == 200, decided.text
            # Only the answer is stored: serve did not run the call, a worker will.
            assert decided.json()["result"]["status"] == "pending"
        serve.send_signal(signal.SIGKILL)
        serve.wait(10)
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
        drain.join(10)
        if serve.stdout is not None:
            serve.stdout.close()
    asyncio.run(_finishes(cluster, turn["run_id"], approval))


async def _finishes(cluster: Cluster, run_id: str, approval: str) -> None:
    async with corral.open(cluster.data_dir) as platform:
        rt = platform.runtime
        settled = await cluster.settled(rt, run_id, 60)
        result = await rt.result(run_id)
        record = await platform.approvals.get(approval)
    assert settled.status == "finished", cluster.logs()
    assert "Launched." in result.text
    assert record.result is not None and "launched the probe" in str(record.result)
