"""`corral serve` prints a one-time sign-in link for the owner; it works once."""

from __future__ import annotations

import os
import re
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
            found = re.search(r"web UI: (\S*/ui/sign-in/[\w-]+)", line)
            path = found.group(1) if found else path
            running = re.search(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", line)
            if running:
                url = running.group(1)
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
