"""Time to the first streamed token in the web UI, against the API's SSE stream.

    .venv/bin/python bench/ui.py [--turns N]

One platform and one uvicorn server on loopback; one scripted model turn (a few words of
text, streamed word by word) is sent N times each way. The baseline is an HTTP client on
the API: it follows ``GET /conversations/{id}/events``, posts the message with
``wait: false`` and stops the clock at the first ``delta`` event. The UI figure is the
same turn in real Chromium (Debian's, through Playwright): the clock runs in the page from
the composer's submit to the first text appearing in the live answer. Exits 1 when the
page's median is more than 100 ms over the API's; 2 when Chromium or Playwright is absent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import socket
import statistics
import tempfile
import time
from pathlib import Path

import httpx
import uvicorn

import corral
from corral.server import create_app
from corral.server.ui import sign_in_link
from outcome import Figure, finish, skip

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
OVER_MS = 100.0
TEXT = "The first token arrives and then the rest of this short answer follows."

_FIRST_TOKEN = """() => new Promise((resolve) => {
  const live = document.getElementById("live");
  const box = document.querySelector("#composer textarea");
  let started = 0;
  const seen = new MutationObserver(() => {
    if (started && live.textContent) { seen.disconnect(); resolve(performance.now() - started); }
  });
  seen.observe(live, {childList: true, subtree: true, characterData: true});
  box.value = "go";
  started = performance.now();
  htmx.trigger(box.form, "submit");
})"""


async def api_first_token(client: httpx.AsyncClient, conversation_id: str, after: int) -> float:
    url = f"/conversations/{conversation_id}/events"
    async with client.stream("GET", url, params={"after": after}) as events:
        lines = events.aiter_lines()
        started = time.perf_counter()
        await client.post(
            f"/conversations/{conversation_id}/messages", json={"message": "go", "wait": False}
        )
        async for line in lines:
            if line.startswith("event: delta"):
                return (time.perf_counter() - started) * 1000
    raise RuntimeError("the stream ended before a delta")


async def measure(turns: int, folder: Path) -> tuple[list[float], list[float]]:
    from playwright.async_api import async_playwright

    script = folder / "script.json"
    script.write_text(json.dumps({"turns": [{"text": TEXT}], "after_end": "cycle"}))
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    base = f"http://127.0.0.1:{listener.getsockname()[1]}"
    async with corral.open(folder / "data") as platform:
        app = create_app(platform)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        serving = asyncio.create_task(server.serve(sockets=[listener]))
        rt = platform.runtime
        owner = await platform.caller()
        token = (await platform.identity.create_token("owner")).token
        headers = {"Authorization": f"Bearer {token}"}
        api, page_times = [], []
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as client:
            conversation = await rt.start_conversation(model=f"script:{script}", profile="auto")
            for _ in range(turns):
                after = (await rt.conversation(conversation.id)).last_seq
                api.append(await api_first_token(client, conversation.id, after))
                await rt.wait_idle(conversation.id)
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = await browser.new_page()
            await page.goto(sign_in_link(app, owner.user_id, base))
            chat = await rt.start_conversation(model=f"script:{script}", profile="auto")
            for _ in range(turns):
                await page.goto(f"{base}/ui/c/{chat.id}")
                await page.wait_for_selector("body[data-live=open]", state="attached")
                page_times.append(float(await page.evaluate(_FIRST_TOKEN)))
                await rt.wait_idle(chat.id)
            await browser.close()
        server.should_exit = True
        await serving
    listener.close()
    return api, page_times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=15)
    options = parser.parse_args()
    if shutil.which(CHROMIUM) is None:
        skip("ui", f"no Chromium at {CHROMIUM} (scripts/setup --test installs it)")
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        skip("ui", "Playwright is not installed (scripts/setup --test installs it)")
    with tempfile.TemporaryDirectory() as folder:
        api, page = asyncio.run(measure(options.turns, Path(folder)))
    api_median, page_median = statistics.median(api), statistics.median(page)
    finish(
        "ui",
        [
            Figure(name="API SSE first delta (median)", value=api_median, unit="ms"),
            Figure(name="API SSE first delta (min)", value=min(api), unit="ms"),
            Figure(name="page first token (min)", value=min(page), unit="ms", baseline=min(api)),
            Figure(
                name="page first token (median)",
                value=page_median,
                unit="ms",
                baseline=api_median,
                target=f"< API + {OVER_MS:.0f} ms",
                met=page_median <= api_median + OVER_MS,
            ),
        ],
    )


if __name__ == "__main__":
    main()
