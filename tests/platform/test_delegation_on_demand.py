"""The delegate tool's service is built when first needed (issue 39, item 3): not at open,
but on a run's end (its children stopped, a waiting parent answered), a lookup or a sweep;
its run-end hook keeps its place after the questions' and the channels'."""

from __future__ import annotations

import json
from pathlib import Path

import corral
from corral.platform import Platform
from corral.platform.delegation_on_demand import DELEGATION
from corral.runtime.delegation import Delegation
from corral.tools.services import service_key


def built(platform: Platform) -> object | None:
    return platform.services.deferred[DELEGATION].built


def test_the_key_names_the_service() -> None:
    assert DELEGATION == service_key(Delegation)


async def test_a_run_end_builds_the_service(data_dir: Path, tmp_path: Path) -> None:
    script = tmp_path / "model.json"
    script.write_text(json.dumps({"turns": [{"text": "hi there"}]}))
    async with corral.open(data_dir) as platform:
        assert built(platform) is None
        hooks = [getattr(h, "__qualname__", "") for h in platform.runtime.run_end_hooks]
        assert hooks.index("DelegationOnDemand._on_run_end") > hooks.index(
            "ChannelsOnDemand.deliver_workflow_run"
        )
        turn = await platform.chat("hello", model=f"script:{script}")
        assert "hi there" in turn.text
        service = built(platform)
        assert service is not None and platform.services.require(Delegation) is service
        # Outside a run, the service itself refuses (it was reached through services.runs).
        result = await platform.call_tool("delegate", {"task": "t"})
        assert result.is_error and "from a chat turn" in result.text


async def test_a_lookup_or_a_sweep_builds_it(data_dir: Path) -> None:
    async with corral.open(data_dir) as platform:
        assert built(platform) is None
        info = await platform.runtime.start_conversation(title="no children")
        assert await platform.services.require(Delegation).list_delegates(info.id) == []
    async with corral.open(data_dir) as platform:
        for tick in platform.runtime.on_tick:
            await tick()
        assert built(platform) is not None
