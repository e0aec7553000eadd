"""A connected git remote's stored token reaches git inside ``execute`` only: push and fetch
through a real smart-HTTP server with basic auth succeed with it and fail without it, and the
token shows in no result, row, log or file."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import corral
from corral.packages.core.git_credentials import HELPER_USERNAME, token_variable
from corral.platform import Platform
from tests.conftest import DEMO
from tests.sandbox_owner import git, give_to_sandbox

TOKEN = "ghp_pushToken-never-shown-9f8e7d6c5b4a"


class GitServer(ThreadingHTTPServer):
    root: Path
    seen: list[int]


class _Handler(BaseHTTPRequestHandler):
    """``git http-backend`` as CGI behind HTTP basic auth that checks the token."""

    server: GitServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        wanted = base64.b64encode(f"{HELPER_USERNAME}:{TOKEN}".encode()).decode()
        if self.headers.get("Authorization") != f"Basic {wanted}":
            self.server.seen.append(401)
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.server.seen.append(200)
        parts = urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        env = {
            "PATH": os.environ["PATH"],
            "GIT_PROJECT_ROOT": str(self.server.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "REMOTE_USER": HELPER_USERNAME,
            "REQUEST_METHOD": self.command,
            "PATH_INFO": parts.path,
            "QUERY_STRING": parts.query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
        }
        done = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
        )
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode().split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GitServer]:
    root = tmp_path_factory.mktemp("forge")
    subprocess.run(["git", "init", "-q", "--bare", str(root / "up.git")], check=True)
    httpd = GitServer(("127.0.0.1", 0), _Handler)
    httpd.root, httpd.seen = root, []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def script(tmp_path: Path, *turns: object) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": list(turns)}))
    return f"script:{path}"


def execute(command: str) -> dict[str, object]:
    return {
        "name": "execute",
        "args": {"command": command, "cwd": "data://proj", "env": {"GIT_TERMINAL_PROMPT": "0"}},
    }


async def results(platform: Platform, tmp_path: Path, *commands: str) -> list[str]:
    rt = platform.runtime
    model = script(tmp_path, {"tool_calls": [execute(c) for c in commands]}, {"text": "ok"})
    conversation = await rt.start_conversation(model=model)
    async with rt.events.subscribe(conversation.id) as events:
        turn = await platform.chat("go", conversation_id=conversation.id, profile="auto")
        frames = []
        while (event := events.get_nowait()) is not None:
            frames.append(event)
    final = await platform.runtime.wait_run(turn.run_id)
    assert final.status == "finished", final
    output = [f for f in frames if f["type"] == "output"]
    assert output and TOKEN not in json.dumps(output)  # live frames, as they streamed
    rows = (await platform.runtime.result(turn.run_id)).rows
    dumped = json.dumps([r.data for r in rows], default=str)
    assert TOKEN not in dumped
    # Calls of one turn may run side by side: answer in the order the commands were given.
    found = {
        r.data["result"]["data"]["command"]: json.dumps(r.data["result"])
        for r in rows
        if r.kind == "tool_result"
    }
    return [found[c] for c in commands]


async def connected(platform: Platform, server: GitServer) -> Path:
    await platform.admin.set_live("shell_network", True)
    folder = platform.kernel.settings.drive_dir / "proj"
    folder.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=folder)
    (folder / "README").write_text("hello\n")
    git("add", "README", cwd=folder)
    git("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "first", cwd=folder)
    give_to_sandbox(folder, platform.kernel.settings.sandbox_uid)
    owner = await platform.caller()
    await platform.credentials.set("forge", TOKEN, user_id=owner.user_id)
    url = f"http://127.0.0.1:{server.server_address[1]}/up.git"
    item = {"kind": "git", "name": "origin", "url": url, "fields": {"repo": "data://proj"}}
    item["fields"]["credential"] = "forge"
    added = await platform.call_tool("connect", {"add": [item]})
    assert not added.is_error, added.text
    return folder


async def test_push_and_fetch_use_the_stored_token_which_nobody_sees(
    data_dir: Path, tmp_path: Path, server: GitServer
) -> None:
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        folder = await connected(platform, server)
        config = (folder / ".git" / "config").read_text()
        assert token_variable("origin") in config and TOKEN not in config
        checked = await platform.call_tool(
            "connect", {"check": [{"kind": "git", "name": "origin"}]}
        )
        assert checked.data is not None and checked.data["applied"][0]["credentialHelper"] is True
        variable = token_variable("origin")
        pushed, echoed = await results(
            platform,
            tmp_path,
            "git push -q origin main 2>&1; echo push=$?; git fetch origin 2>&1; echo fetch=$?; "
            "git rev-parse origin/main",
            f"echo ${variable}; env; git credential fill <<< 'url={server_url(server)}'",
        )
        assert "push=0" in pushed, pushed
        assert git("rev-parse", "main", cwd=server.root / "up.git") == git(
            "rev-parse", "main", cwd=folder
        )
        assert "fetch=0" in pushed and git("rev-parse", "main", cwd=folder) in pushed, pushed
        assert 200 in server.seen
        assert TOKEN not in echoed and "password=" in echoed, echoed

        # Without the stored credential the helper answers nothing and the forge says no.
        owner = await platform.caller()
        await platform.credentials.remove("forge", user_id=owner.user_id)
        server.seen.clear()
        [refused] = await results(platform, tmp_path, "git fetch origin 2>&1; echo fetch=$?")
        assert "fetch=128" in refused and server.seen and 200 not in server.seen, refused
    assert TOKEN.encode() not in read_everything(data_dir)


async def test_a_linked_repository_config_is_never_written(data_dir: Path, tmp_path: Path) -> None:
    host_file = tmp_path / "host-config"
    host_file.write_text("[core]\n")
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        await platform.admin.set_live("shell_network", True)
        folder = platform.kernel.settings.drive_dir / "linked"
        (folder / ".git").mkdir(parents=True)
        (folder / ".git" / "config").symlink_to(host_file)
        give_to_sandbox(folder, platform.kernel.settings.sandbox_uid)
        item = {"kind": "git", "name": "origin", "url": "https://forge.example/r.git"}
        item["fields"] = {"repo": "data://linked"}
        added = await platform.call_tool("connect", {"add": [item]})
    assert added.is_error and "symbolic link" in added.text, added.text
    assert host_file.read_text() == "[core]\n"


async def test_the_config_is_edited_as_the_sandbox_uid_not_root(
    data_dir: Path, tmp_path: Path, server: GitServer
) -> None:
    if os.geteuid() != 0:
        pytest.skip("the identity switch happens only when the platform runs as root")
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        folder = await connected(platform, server)
        uid = platform.kernel.settings.sandbox_uid
        # git replaces the config by a rename: the new file is the editor's.
        assert (folder / ".git" / "config").stat().st_uid == uid


def read_everything(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


def server_url(server: GitServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/up.git"


async def test_only_git_commands_in_the_repository_get_a_safe_token(
    data_dir: Path, tmp_path: Path, server: GitServer
) -> None:
    async with corral.open(data_dir, package_paths=[DEMO]) as platform:
        folder = await connected(platform, server)
        owner = await platform.caller()
        (platform.kernel.settings.drive_dir / "elsewhere").mkdir()
        # Plain http off loopback would carry the token in the clear: no helper is written.
        # A value with a line break could add lines to git's credential answer: not staged.
        await platform.credentials.set("cleartext", "tok-cleartext-1", user_id=owner.user_id)
        await platform.credentials.set("broken", "x\nurl=https://evil", user_id=owner.user_id)
        for name, url, credential in [
            ("plain", "http://forge.example/p.git", "cleartext"),
            ("mirror", "https://forge.example/m.git", "broken"),
        ]:
            fields = {"repo": "data://proj", "credential": credential}
            item = {"kind": "git", "name": name, "url": url, "fields": fields}
            added = await platform.call_tool("connect", {"add": [item]})
            assert not added.is_error, added.text
        config = (folder / ".git" / "config").read_text()
        assert token_variable("plain") not in config and token_variable("mirror") in config
        variables = [token_variable(n) for n in ("origin", "plain", "mirror")]
        shown = "[" + "][".join(f"${v}" for v in variables) + "]"
        outside = execute(f"git --version >/dev/null; echo {shown}")
        outside["args"] = {**outside["args"], "cwd": "data://elsewhere"}  # type: ignore[dict-item]
        inside = execute(f"git --version >/dev/null; echo {shown}")
        inside["args"] = {**inside["args"], "cwd": "data://proj"}  # type: ignore[dict-item]
        turn = await platform.chat(
            "go",
            model=script(
                tmp_path,
                {"tool_calls": [execute(f"echo {shown}"), outside, inside]},
                {"text": "ok"},
            ),
            profile="auto",
        )
        final = await platform.runtime.wait_run(turn.run_id)
        assert final.status == "finished", final
        rows = (await platform.runtime.result(turn.run_id)).rows
        texts = [json.dumps(r.data["result"]) for r in rows if r.kind == "tool_result"]
        assert len(texts) == 3, texts
        # Without `git` and outside the repository nothing is staged; inside, only origin's
        # token (redacted in the result): the cleartext remote's and the broken one are not.
        assert sum("[][][]" in t for t in texts) == 2, texts
        assert sum("[[redacted]][][]" in t for t in texts) == 1, texts

        # Under the sandbox a command may rewrite the repository's config (the sandbox holds
        # what git then runs); check tells a helper that is no longer the platform's.
        url = server_url(server)
        tampered = await platform.call_tool(
            "execute",
            {"command": f"git config credential.{url}.helper '!true'", "cwd": "data://proj"},
        )
        assert not tampered.is_error, tampered.text
        checked = await platform.call_tool(
            "connect", {"check": [{"kind": "git", "name": "origin"}]}
        )
        assert checked.data is not None and checked.data["applied"][0]["credentialHelper"] is False
