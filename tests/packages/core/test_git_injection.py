"""A connected git remote whose credential is injected by the egress proxy: the command gets
the placeholder under the remote's variable, never the stored token."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import corral
from corral.connect import Injection
from corral.packages.core.egress_credentials import injected_bindings
from corral.packages.core.git_credentials import token_variable
from corral.shell.egress.credentials import placeholder
from tests.conftest import DEMO
from tests.packages.core.test_git_credentials import execute, script
from tests.sandbox_owner import git, give_to_sandbox

TOKEN = "ghp_injectedToken-never-in-a-sandbox-1a2b3c"


async def test_an_injected_remote_credential_stages_its_placeholder(
    data_dir: Path, tmp_path: Path
) -> None:
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        folder = platform.kernel.settings.drive_dir / "proj"
        folder.mkdir(parents=True)
        git("init", "-q", "-b", "main", cwd=folder)
        give_to_sandbox(folder, platform.kernel.settings.sandbox_uid)
        owner = await platform.caller()
        injection = Injection(hosts=("forge.example",), inject_as="basic")
        await platform.credentials.set("forge", TOKEN, user_id=owner.user_id, injection=injection)
        fields = {"repo": "data://proj", "credential": "forge"}
        item = {"kind": "git", "name": "origin", "url": "https://forge.example/o/r.git"}
        added = await platform.call_tool("connect", {"add": [{**item, "fields": fields}]})
        assert not added.is_error, added.text

        variable = token_variable("origin")
        command = f'git --version >/dev/null; printf %s "${variable}" | sha256sum'
        turn = await platform.chat(
            "go",
            model=script(tmp_path, {"tool_calls": [execute(command)]}, {"text": "ok"}),
            profile="auto",
        )
        final = await platform.runtime.wait_run(turn.run_id)
        assert final.status == "finished", final
        rows = (await platform.runtime.result(turn.run_id)).rows
        (text,) = [json.dumps(r.data["result"]) for r in rows if r.kind == "tool_result"]

        (binding,) = await injected_bindings(platform.credentials, owner.user_id)
        stand_in = placeholder(binding)
        assert stand_in != TOKEN and binding.secret == TOKEN
        assert hashlib.sha256(stand_in.encode()).hexdigest() in text, text
        assert hashlib.sha256(TOKEN.encode()).hexdigest() not in text
        assert TOKEN not in text
