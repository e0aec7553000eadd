"""`corral channels` in real processes: pairing codes listed, approved and rejected.

Three processes only: each one opens the platform, which is slow on a busy machine."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import corral
from corral.channels import Channels
from tests.cli.processes import corral_cli
from tests.cli.test_credentials_cli import VALUE


def run(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return corral_cli(data_dir, "channels", *args)


async def test_pairing_list_approve_and_reject(data_dir: Path) -> None:
    # The outbound URL is a private address the fetch policy refuses at once: the "Paired"
    # notice fails fast instead of waiting on DNS, and check counts the failure.
    async with corral.open(data_dir) as platform:
        owner = await platform.caller()
        service = platform.services.require(Channels)
        await service.connect(
            "hook",
            "webhook",
            {"signing_secret": VALUE, "outbound_url": "https://10.9.9.9/in"},
            owner,
        )
        ana, _ = await service.store.pending("hook", "s1", "room", "Ana", 600)
        bob, _ = await service.store.pending("hook", "s2", "room", "Bob", 600)
    listed = run(data_dir, "pairing", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert sorted(p["code"] for p in json.loads(listed.stdout)) == sorted([ana.code, bob.code])
    approved = run(data_dir, "pairing", "approve", ana.code)
    assert approved.returncode == 0, approved.stderr
    assert "approved 'Ana' on channel 'hook'" in approved.stdout
    rejected = run(data_dir, "pairing", "reject", bob.code, "--json")
    assert json.loads(rejected.stdout)["status"] == "rejected"
    async with corral.open(data_dir) as platform:
        state = await platform.services.require(Channels).check("hook")
    assert (state["pairedSenders"], state["failures"]) == (1, 1)
    assert VALUE not in listed.stdout + approved.stdout + rejected.stdout


def test_notify_on_and_off_with_a_clear_refusal_of_anything_else(data_dir: Path) -> None:
    turned = run(data_dir, "notify", "on")
    assert turned.returncode == 0, turned.stderr
    assert "notifications of pending decisions are on, but you have no paired chat" in " ".join(
        turned.stdout.split()
    )
    shown = run(data_dir, "notify", "--json")
    assert json.loads(shown.stdout) == {"notify": True, "paired_chats": []}
    wrong = run(data_dir, "notify", "maybe")
    assert wrong.returncode == 2
    assert "notify takes 'on' or 'off', not 'maybe'" in " ".join(wrong.stderr.split())
