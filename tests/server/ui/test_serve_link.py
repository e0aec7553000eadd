"""`corral serve` prints a one-time sign-in link for the owner; it works once."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import httpx


def test_serve_prints_a_one_time_sign_in_link(data_dir: Path) -> None:
    env = {**os.environ, "CORRAL_DATA_DIR": str(data_dir)}
    process = subprocess.Popen(
        [sys.executable, "-m", "corral", "serve", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    try:
        seen, path, url = [], None, None
        for line in process.stdout:
            seen.append(line)
            found = re.search(r"web UI: (http://127\.0\.0\.1:\d+)(/ui/sign-in/[\w-]+)", line)
            if found:  # printed once the port is bound: the full link works
                url, path = found.group(1), found.group(2)
                break
        assert url and path, "".join(seen)
        with httpx.Client(base_url=url, timeout=10) as http:
            first = http.get(path)
            assert first.status_code == 303 and first.headers["location"] == "/ui"
            cookie = first.headers["set-cookie"]
            assert "corral_session=" in cookie and "HttpOnly" in cookie
            assert "samesite=strict" in cookie.lower()
            assert http.get("/ui").status_code == 200
            again = httpx.get(url + path, timeout=10)
            assert again.status_code == 401
    finally:
        process.terminate()
        process.wait(10)
        process.stdout.close()


def test_serve_on_a_taken_port_says_so_and_prints_no_link(data_dir: Path) -> None:
    taken = socket.create_server(("127.0.0.1", 0))
    try:
        env = {**os.environ, "CORRAL_DATA_DIR": str(data_dir)}
        port = str(taken.getsockname()[1])
        done = subprocess.run(
            [sys.executable, "-m", "corral", "serve", "--host", "127.0.0.1", "--port", port],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        taken.close()
    assert done.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr and "--port" in done.stderr
    assert "web UI" not in done.stdout and "Traceback" not in done.stderr
