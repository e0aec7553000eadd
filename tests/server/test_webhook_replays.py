"""Webhook replays: an ``Idempotency-Key`` starts one run, whatever the repeats, the spelling of
the key, concurrent deliveries, a restart or a second process."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

import corral
from corral.platform import Platform
from corral.server import create_app
from tests.conftest import DEMO
from tests.runtime.conftest import RTKIT
from tests.server.loopback import serving
from tests.server.test_conversations_api import api_platform, http
from tests.server.test_workflows_api import hooked_workflow, runs

__all__ = ["api_platform", "http"]  # the fixtures these tests use

BODY = {"ticket": {"id": 7}}


async def deliver(
    client: httpx.AsyncClient, path: str, key: str, body: Any, idempotency: str | None
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"}
    if idempotency is not None:
        headers["Idempotency-Key"] = idempotency
    return await client.post(path, json=body, headers=headers)


async def test_an_exact_replay_starts_no_second_run_and_names_the_first(
    http: httpx.AsyncClient, api_platform: Platform, tmp_path: Path
) -> None:
    workflow_id, hook_id, key = await hooked_workflow(http, tmp_path)
    path = f"/hooks/{workflow_id}/{hook_id}"
    first = await deliver(http, path, key, BODY, "evt-123")
    assert first.status_code == 202, first.text
    again = await deliver(http, path, key, BODY, "evt-123")
    assert again.status_code == 200, again.text
    assert again.json()["run_id"] == first.json()["run_id"] and again.json()["replayed"] is True
    assert again.headers["Idempotent-Replayed"] == "true"
    assert "no new run was started" in again.json()["detail"]
    assert await runs(api_platform) == 1
    # Without a key every delivery is new (the rate limit still bounds them).
    assert (await deliver(http, path, key, BODY, None)).status_code == 202
    assert (await deliver(http, path, key, BODY, None)).status_code == 202
    assert await runs(api_platform) == 3


async def test_the_key_cannot_be_varied_or_reused_for_another_body(
    http: httpx.AsyncClient, api_platform: Platform, tmp_path: Path
) -> None:
    workflow_id, hook_id, key = await hooked_workflow(http, tmp_path)
    path = f"/hooks/{workflow_id}/{hook_id}"
    first = await deliver(http, path, key, BODY, "Evt-ABC")
    assert first.status_code == 202
    for variant in ("evt-abc", "EVT-ABC", " Evt-ABC", "Evt-ABC\t"):
        again = await deliver(http, path, key, BODY, variant)
        assert again.status_code == 200 and again.json()["run_id"] == first.json()["run_id"]
    # The same document spaced or ordered differently is the same body.
    spaced = await http.post(
        path,
        content=b'{ "ticket" : { "id" : 7 } }',
        headers={"Authorization": f"Bearer {key}", "Idempotency-Key": "evt-abc"},
    )
    assert spaced.status_code == 200
    other = await deliver(http, path, key, {"ticket": {"id": 8}}, "evt-abc")
    assert other.status_code == 422 and "another body" in other.json()["detail"]
    assert await runs(api_platform) == 1


@pytest.mark.parametrize(
    "bad",
    ["", "   ", "evt 1", "x" * 256, "évt-1", "evt-1\x00"],
    ids=["empty", "blank", "inner-space", "too-long", "non-ascii", "control"],
)
async def test_a_malformed_key_is_a_400_and_starts_nothing(
    http: httpx.AsyncClient, api_platform: Platform, tmp_path: Path, bad: str
) -> None:
    workflow_id, hook_id, key = await hooked_workflow(http, tmp_path)
    answer = await http.post(
        f"/hooks/{workflow_id}/{hook_id}",
        json=BODY,
        headers={"Authorization": f"Bearer {key}", "Idempotency-Key": bad.encode()},
    )
    assert answer.status_code == 400, answer.text
    assert "Idempotency-Key must be" in answer.json()["detail"]
    assert await runs(api_platform) == 0


async def test_two_idempotency_headers_are_refused(
    http: httpx.AsyncClient, api_platform: Platform, tmp_path: Path
) -> None:
    workflow_id, hook_id, key = await hooked_workflow(http, tmp_path)
    answer = await http.post(
        f"/hooks/{workflow_id}/{hook_id}",
        json=BODY,
        headers=[
            ("Authorization", f"Bearer {key}"),
            ("Idempotency-Key", "evt-1"),
            ("Idempotency-Key", "evt-2"),
        ],
    )
    assert answer.status_code == 400 and "one Idempotency-Key" in answer.json()["detail"]
    assert await runs(api_platform) == 0


async def test_a_refused_delivery_does_not_use_up_its_key(
    http: httpx.AsyncClient, api_platform: Platform, tmp_path: Path
) -> None:
    await http.put("/settings/live/workflow_hook_rate_per_minute", json={"value": 1})
    workflow_id, hook_id, key = await hooked_workflow(http, tmp_path)
    path = f"/hooks/{workflow_id}/{hook_id}"
    assert (await deliver(http, path, key, BODY, None)).status_code == 202
    limited = await deliver(http, path, key, BODY, "evt-9")
    assert limited.status_code == 429
    await http.put("/settings/live/workflow_hook_rate_per_minute", json={"value": 5})
    retried = await deliver(http, path, key, BODY, "evt-9")
    assert retried.status_code == 202, retried.text
    # ...and the delivery that did start a run holds the key from then on.
    replay = await deliver(http, path, key, BODY, "evt-9")
    assert replay.status_code == 200 and replay.json()["run_id"] == retried.json()["run_id"]
    assert await runs(api_platform) == 2


async def raw_update(data_dir: Path, statement: str) -> int:
    """Run ``statement`` on the database file from outside the platform, in a thread: the run
    the delivery started may hold the write lock until the event loop lets it commit."""

    def update() -> int:
        with sqlite3.connect(data_dir / "corral.db", timeout=30) as raw:
            return raw.execute(statement).rowcount

    return await asyncio.to_thread(update)


async def test_a_key_past_the_window_is_forgotten(
    http: httpx.AsyncClient, api_platform: Platform, tmp_path: Path, data_dir: Path
) -> None:
    workflow_id, hook_id, key = await hooked_workflow(http, tmp_path)
    path = f"/hooks/{workflow_id}/{hook_id}"
    await http.put("/settings/live/workflow_hook_idempotency_hours", json={"value": 1})
    assert (await deliver(http, path, key, BODY, "evt-old")).status_code == 202
    moved = await raw_update(
        data_dir, "UPDATE workflow_hook_deliveries SET created_at = datetime('now', '-61 minutes')"
    )
    assert moved == 1
    assert (await deliver(http, path, key, BODY, "evt-old")).status_code == 202
    assert await runs(api_platform) == 2


async def test_a_claim_left_by_a_dead_process_is_taken_over(
    http: httpx.AsyncClient, api_platform: Platform, tmp_path: Path, data_dir: Path
) -> None:
    workflow_id, hook_id, key = await hooked_workflow(http, tmp_path)
    path = f"/hooks/{workflow_id}/{hook_id}"
    assert (await deliver(http, path, key, BODY, "evt-dead")).status_code == 202
    # As if the process had died between claiming the key and starting the run.
    await raw_update(data_dir, "UPDATE workflow_hook_deliveries SET run_id = NULL")
    starting = await deliver(http, path, key, BODY, "evt-dead")
    assert starting.status_code == 409 and "still starting" in starting.json()["detail"]
    await raw_update(
        data_dir, "UPDATE workflow_hook_deliveries SET created_at = datetime('now', '-6 minutes')"
    )
    taken = await deliver(http, path, key, BODY, "evt-dead")
    assert taken.status_code == 202, taken.text
    assert await runs(api_platform) == 2


async def test_concurrent_deliveries_of_one_key_start_one_run(
    http: httpx.AsyncClient, api_platform: Platform, tmp_path: Path
) -> None:
    workflow_id, hook_id, key = await hooked_workflow(http, tmp_path)
    path = f"/hooks/{workflow_id}/{hook_id}"
    async with serving(create_app(api_platform)) as base, httpx.AsyncClient(base_url=base) as real:
        answers = await asyncio.gather(
            *(deliver(real, path, key, BODY, "evt-burst") for _ in range(8))
        )
    statuses = sorted(a.status_code for a in answers)
    assert statuses.count(202) == 1, [a.text for a in answers]
    assert set(statuses) <= {200, 202, 409}, [a.text for a in answers]
    assert await runs(api_platform) == 1


async def test_a_key_holds_across_a_restart_and_a_second_process(
    data_dir: Path, tmp_path: Path
) -> None:
    async def opened() -> Any:
        return corral.open(data_dir, package_paths=[DEMO, RTKIT])

    async with await opened() as first:
        owner = await first.identity.create_token("owner")
        auth = {"Authorization": f"Bearer {owner.token}"}
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(first)),
            base_url="http://corral.test",
            headers=auth,
        ) as one:
            workflow_id, hook_id, key = await hooked_workflow(one, tmp_path)
            path = f"/hooks/{workflow_id}/{hook_id}"
            started = await deliver(one, path, key, BODY, "evt-restart")
            assert started.status_code == 202
            # A second platform on the same store, as a second `corral serve` would be.
            async with (
                await opened() as second,
                serving(create_app(second)) as base,
                httpx.AsyncClient(base_url=base) as two,
            ):
                answers = await asyncio.gather(
                    deliver(two, path, key, BODY, "evt-restart"),
                    deliver(one, path, key, BODY, "evt-two"),
                    deliver(two, path, key, BODY, "evt-two"),
                )
            assert answers[0].status_code == 200
            assert answers[0].json()["run_id"] == started.json()["run_id"]
            assert sorted(a.status_code for a in answers[1:]) in ([200, 202], [202, 409])
    async with (
        await opened() as reopened,
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(reopened)),
            base_url="http://corral.test",
        ) as after,
    ):
        again = await deliver(after, path, key, BODY, "evt-restart")
        assert again.status_code == 200 and again.json()["run_id"] == started.json()["run_id"]
        assert await runs(reopened) == 2


async def test_on_postgresql_two_platforms_start_one_run_per_key(
    database_url: str, tmp_path: Path
) -> None:
    data = tmp_path / "pg-data"
    data.mkdir()
    (data / "corral.toml").write_text(f"database_url = {json.dumps(database_url)}\n")

    def opened() -> Any:
        return corral.open(data, package_paths=[DEMO, RTKIT])

    async with opened() as first, opened() as second:
        owner = await first.identity.create_token("owner")
        async with (
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=create_app(first)),
                base_url="http://corral.test",
                headers={"Authorization": f"Bearer {owner.token}"},
            ) as one,
            serving(create_app(second)) as base,
            httpx.AsyncClient(base_url=base) as two,
        ):
            workflow_id, hook_id, key = await hooked_workflow(one, tmp_path)
            path = f"/hooks/{workflow_id}/{hook_id}"
            answers = await asyncio.gather(
                *(deliver(c, path, key, BODY, "evt-pg") for c in (one, two) * 4)
            )
            statuses = sorted(a.status_code for a in answers)
            assert statuses.count(202) == 1, [a.text for a in answers]
            assert set(statuses) <= {200, 202, 409}
            assert await runs(first) == 1
