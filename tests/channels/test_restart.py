"""A graceful restart of `corral serve` (SIGTERM) with a run in flight loses no chat
message: the runtime ends the run and stores its last rows before channels close, rows
the vendor did not accept stay after the chat's cursor, and the next serve sends them.
A real `corral serve` process reaches the loopback Telegram stand-in through the
administrator's ``channels_api_hosts``."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from corral.platform import Platform
from tests.channels.conftest import channels, connect, tg_message
from tests.channels.vendor_servers import FakeTelegram
from tests.conftest import DEMO
from tests.runtime.conftest import RTKIT, ScriptWriter, call


@contextmanager
def serving(data_dir: Path, telegram: FakeTelegram) -> Iterator[subprocess.Popen[str]]:
    """`corral serve` on the data folder until the block ends (or the test stops it)."""
    env = {
        **os.environ,
        "CORRAL_DATA_DIR": str(data_dir),
        "CORRAL_PACKAGE_PATH": os.pathsep.join([str(DEMO), str(RTKIT)]),
        "CORRAL_TELEGRAM_API_URL": telegram.url,
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "corral", "serve", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    seen: list[str] = []
    for line in process.stdout:
        seen.append(line)
        if "Application startup complete" in line:
            break
    drain = threading.Thread(target=lambda: seen.extend(process.stdout or ()), daemon=True)
    drain.start()
    try:
        assert process.poll() is None, "".join(seen)
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(60)
        drain.join(10)
        process.stdout.close()


def sent_since(telegram: FakeTelegram, start: int) -> list[str]:
    with telegram.changed:
        calls = telegram.calls[start:]
    return [c.json["text"] for c in calls if c.path.endswith("/sendMessage")]


async def wait_for(telegram: FakeTelegram, start: int, prefix: str) -> bool:
    return await asyncio.to_thread(
        telegram.wait_for,
        lambda: any(t.startswith(prefix) for t in sent_since(telegram, start)),
        60.0,
    )


async def test_sigterm_with_a_run_in_flight_sends_its_last_rows_after_the_restart(
    ch_platform: Platform, telegram: FakeTelegram, data_dir: Path, write_script: ScriptWriter
) -> None:
    model = write_script({"text": "Working.", "tool_calls": [call("gate", name="never")]})
    await connect(
        ch_platform,
        name="tg",
        provider="telegram",
        secret=telegram.token,
        fields={"poll_timeout": "1", "model": model},
    )
    await ch_platform.admin.set_live("channels_api_hosts", f"127.0.0.1:{telegram.port}")
    await ch_platform.admin.set_live("channels_relay_sweep_ms", 100)

    with serving(data_dir, telegram) as first:
        telegram.push(tg_message(1, "hello?"))
        assert await wait_for(telegram, 0, "This chat is not paired")
        code = sent_since(telegram, 0)[-1].split("pairing code is ")[1].split(" ")[0]
        await channels(ch_platform).pairing.approve(code, await ch_platform.caller())
        telegram.push(tg_message(2, "go"))
        assert await wait_for(telegram, 0, "Working")  # the run waits at its gate
        with telegram.changed:
            telegram.failures.extend([502] * 100_000)  # Telegram is down meanwhile
        first.send_signal(signal.SIGTERM)
        # uvicorn shuts down gracefully, then dies of the signal it caught
        assert await asyncio.to_thread(first.wait, 60) in (0, -signal.SIGTERM)

    with telegram.changed:
        telegram.failures.clear()
        restart = len(telegram.calls)
    with serving(data_dir, telegram):
        assert await wait_for(telegram, restart, "The run")
        ends = [t for t in sent_since(telegram, restart) if t.startswith("The run")]
        assert len(ends) == 1, ends
