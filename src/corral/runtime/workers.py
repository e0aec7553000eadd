"""Who advances a run: ``host:pid:start`` worker ids, and whether such a worker still lives.

``start`` is the process start time from ``/proc``, so a reused pid is not mistaken for the
old process.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

__all__ = ["process_start", "worker_alive", "worker_id"]


def process_start(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot), None if there is none."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def worker_id() -> str:
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{process_start(pid) or '-'}"


def worker_alive(worker: str | None) -> bool:
    """False only when ``worker`` ran on this host and that process is gone."""
    if not worker:
        return False
    host, _, rest = worker.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return True
    pid = int(pid_text)
    if start and start != "-":
        return process_start(pid) == start
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
