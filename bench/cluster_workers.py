"""`corral worker` processes for the cluster benches (cluster.py, takeover.py): start one,
optionally as if on another machine, and wait until they heartbeat."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import corral
from checkout import child_env

__all__ = ["serve_up", "start_serve", "start_worker", "workers_up"]


def start_worker(
    data_dir: Path, log: Path, *, concurrency: int | None = None, hostname: str | None = None
) -> subprocess.Popen[bytes]:
    """A `corral worker` on ``data_dir`` writing to ``log``. With ``hostname`` it runs in a
    UTS namespace of its own under that name (needs root): a worker on another machine,
    whose liveness this host cannot check by pid, so only its heartbeats tell."""
    # unshare and sh exec in place: the worker keeps the pid Popen knows.
    elsewhere = (
        ["unshare", "--uts", "--", "sh", "-c", 'hostname "$1" && shift && exec "$@"', "sh"]
        if hostname is not None
        else []
    )
    command = [
        *elsewhere,
        *([hostname] if hostname is not None else []),
        *(sys.executable, "-m", "corral", "--data-dir", str(data_dir), "worker"),
        *(["--concurrency", str(concurrency)] if concurrency is not None else []),
    ]
    with log.open("ab") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=child_env())


def start_serve(data_dir: Path, log: Path) -> subprocess.Popen[bytes]:
    """A `corral serve` on ``data_dir`` on a free loopback port, writing to ``log``."""
    command = [sys.executable, "-m", "corral", "--data-dir", str(data_dir), "serve"]
    with log.open("ab") as out:
        return subprocess.Popen(
            [*command, "--host", "127.0.0.1", "--port", "0"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=child_env(),
        )


async def serve_up(serve: subprocess.Popen[bytes], log: Path, seen: int) -> str:
    """How a `corral serve` started after ``seen`` bytes of ``log``: up (its sign-in link is
    printed once its port is bound and the platform open) or the exit and its last line."""
    began = time.perf_counter()
    while True:
        said = (await asyncio.to_thread(log.read_bytes))[seen:].decode(errors="replace")
        if "web UI:" in said:
            return f"up in {time.perf_counter() - began:.1f} s"
        if serve.poll() is not None:
            last = said.strip().splitlines()[-1:] or [""]
            return f"exit {serve.returncode}: {last[0]}"
        await asyncio.sleep(0.2)


async def workers_up(platform: corral.Platform, expected: int) -> None:
    """Wait until ``expected`` workers heartbeat (they import and connect first)."""
    from sqlalchemy import text

    query = text("SELECT count(*) FROM procrastinate_workers")
    while True:
        async with platform.kernel.sessions() as session:
            if int(await session.scalar(query) or 0) >= expected:
                return
        await asyncio.sleep(0.2)
