"""The built-in skills' scripts, run for real against a live server on loopback.

A scripted model activates each skill and runs its scripts with cwd "${SKILL_DIR}" in the
sandbox; the scripts authenticate with the run's ticket and call the real routes with curl.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

import corral
from corral.platform import Platform
from corral.runtime.skills import Skills
from corral.shell.service import ShellService
from tests.runtime.conftest import call
from tests.server.live_server import bound_socket, serving

pytestmark = pytest.mark.asyncio(loop_scope="module")


class Live:
    """The platform, its server's URL and a model-script writer."""

    def __init__(self, platform: Platform, url: str, scripts: Path) -> None:
        self.platform = platform
        self.url = url
        self.scripts = scripts
        self.count = 0

    def model(self, *turns: Any) -> str:
        self.count += 1
        path = self.scripts / f"script-{self.count}.json"
        path.write_text(json.dumps({"turns": list(turns)}))
        return f"script:{path}"

    async def run_scripts(
        self, skill: str, *commands: str, user: str | None = None, cid: str | None = None
    ) -> list[str]:
        """One turn: activate ``skill``, then run each command in turn; their outputs."""
        turns: list[Any] = [{"tool_calls": [call("execute", action="skill", skill=skill)]}]
        turns += [
            {"tool_calls": [call("execute", command=c, cwd="${SKILL_DIR}", skill=skill)]}
            for c in commands
        ]
        turns.append({"text": "Done."})
        turn = await self.platform.chat(
            "go", model=self.model(*turns), profile="auto", user=user, conversation_id=cid
        )
        assert turn.status == "finished", turn
        rows = await self.platform.rows(turn.conversation_id, user=user)
        results = [r.data["result"] for r in rows if r.kind == "tool_result"][-len(commands) :]
        return [r["content"][0]["text"] for r in results]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def live(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Live]:
    root = tmp_path_factory.mktemp("skills-live")
    sock = bound_socket()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("CORRAL_")}
    try:
        async with corral.open(root / "data", api_url=url) as platform:
            await platform.admin.set_live("shell_network", True)
            await platform.identity.create_user("ana", role="member")
            await platform.admin.grant_source(
                "data", principal_kind="role", principal="member", rights="rwx"
            )
            async with serving(platform, sock):
                yield Live(platform, url, root)
    finally:
        os.environ.update(saved)


async def test_the_execute_skill_lists_reads_and_stops_only_your_shells(live: Live) -> None:
    platform = live.platform
    assert platform.services.require(Skills).api_url == live.url
    started = {}
    for user in (None, "ana"):
        turn = await platform.chat(
            "start",
            model=live.model(
                {
                    "tool_calls": [
                        call(
                            "execute",
                            command="echo started-$USER_TAG; exec sleep 120",
                            env={"USER_TAG": user or "owner"},
                            background=True,
                        )
                    ]
                },
                {"text": "Started."},
            ),
            profile="auto",
            user=user,
        )
        assert turn.status == "finished", turn
        rows = await platform.rows(turn.conversation_id, user=user)
        [result] = [r.data["result"] for r in rows if r.kind == "tool_result"]
        assert "shell_id" in result["data"], result
        started[user or "owner"] = result["data"]["shell_id"]
    background = platform.services.require(ShellService).background
    owner = await platform.caller()
    await background.output(started["owner"], owner, after=0, wait=20)
    mine, theirs = started["owner"], started["ana"]
    listed, output, refused, stopped = await live.run_scripts(
        "execute",
        "bash scripts/shells.sh",
        f"bash scripts/output.sh {mine} --tail 1",
        f"bash scripts/stop.sh {theirs}",
        f"bash scripts/stop.sh {mine}",
    )
    assert mine in listed and theirs not in listed and "running" in listed
    assert "started-owner" in output and f"[{mine} running" in output
    assert "error: not yours to stop" in refused and "[exit code 1" in refused
    assert f"{mine} is stopped" in stopped or f"{mine} is stopping" in stopped, stopped
    assert (await background.get(theirs)).status == "running"
    await background.stop(theirs, await platform.caller("ana"))
