"""Running one hook: a command through ``/bin/sh -c`` or a POST to an operator's URL.

A command gets execute's clean environment (locale and terminal only from the platform; no
secret), ``CLAUDE_PROJECT_DIR`` set to the project drive, the drive as working folder and
the hook input as JSON on stdin. When the platform runs as root the command starts through
:func:`corral.shell.launcher.launcher_argv` as the sandbox uid, as MCP stdio servers do. A
timeout kills the command's whole process group. What is read back is bounded
(:data:`OUTPUT_CAP` bytes of stdout and of stderr). With a ``network`` source a command runs
under the shell's egress policy (:mod:`corral.shell.egress.helpers`): a network namespace of
its own, with the egress proxy when the policy allows some domain.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from corral.runtime.hooks.config import HookHandler
from corral.shell.environment import build_environment
from corral.shell.launcher import launcher_argv
from corral.tracing.propagation import traced_variables

if TYPE_CHECKING:
    from corral.shell.egress.helpers import HelperNetwork

__all__ = ["OUTPUT_CAP", "HookFailure", "HookRunner", "Reply"]

OUTPUT_CAP = 64 * 1024
_SHELL = "/bin/sh"


class HookFailure(Exception):
    """The hook could not give an answer (it did not start, timed out, HTTP error...)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """What a hook answered: an exit status (HTTP: 0 for 2xx) and its bounded output."""

    exit_code: int
    stdout: str
    stderr: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class HookRunner:
    """Where and as whom hooks run."""

    project_dir: Path
    """The project drive: the working folder and ``CLAUDE_PROJECT_DIR``."""
    sandbox_uid: int
    """The uid a command runs as when the platform is root."""
    network: Callable[[str | None], Awaitable[HelperNetwork | None]] | None = None
    """A command's network under the egress policy, given the conversation its connections
    are logged under (None from it: the host's network)."""

    async def run(self, handler: HookHandler, body: bytes) -> Reply:
        if handler.kind == "http":
            return await _post(handler, body)
        return await self._command(handler, body)

    async def _command(self, handler: HookHandler, body: bytes) -> Reply:
        as_root = os.geteuid() == 0
        home = tempfile.mkdtemp(prefix="corral-hook-")
        try:
            if as_root:
                os.chown(home, self.sandbox_uid, self.sandbox_uid)
            env = build_environment(
                platform_env=os.environ,
                home=home,
                variables=traced_variables({"CLAUDE_PROJECT_DIR": str(self.project_dir)}),
            )
            argv = [_SHELL, "-c", handler.command]
            if as_root:
                argv = launcher_argv(argv, uid=self.sandbox_uid)
            network = None if self.network is None else await self.network(_session(body))
            if network is None:
                return await _spawn(argv, env.values, self.project_dir, body, handler.timeout_s)
            try:
                return await _spawn(
                    network.wrap(argv, str(self.project_dir)),
                    {**env.values, **network.env},
                    self.project_dir,
                    body,
                    handler.timeout_s,
                    pass_fds=network.pass_fds,
                    spawned=network.spawned,
                )
            finally:
                await network.finish()
        finally:
            shutil.rmtree(home, ignore_errors=True)


def _session(body: bytes) -> str | None:
    """The conversation a hook runs for (its input's ``session_id``), if any."""
    try:
        found = json.loads(body).get("session_id")
    except (ValueError, AttributeError):
        return None
    return found if isinstance(found, str) and found else None


async def _spawn(
    argv: list[str],
    env: dict[str, str],
    cwd: Path,
    body: bytes,
    timeout_s: float,
    *,
    pass_fds: tuple[int, ...] = (),
    spawned: Callable[[], None] = lambda: None,
) -> Reply:
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,
            pass_fds=pass_fds,
        )
    except OSError as exc:
        raise HookFailure(f"could not start: {exc.strerror or exc}") from None
    spawned()
    assert process.stdin and process.stdout and process.stderr
    try:
        async with asyncio.timeout(timeout_s):
            _, out, err, code = await asyncio.gather(
                _feed(process.stdin, body),
                _read_capped(process.stdout),
                _read_capped(process.stderr),
                process.wait(),
            )
    except TimeoutError:
        raise HookFailure(f"timed out after {timeout_s:g} s and was killed") from None
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
    return Reply(exit_code=code, stdout=_text(out), stderr=_text(err))


async def _feed(stdin: asyncio.StreamWriter, body: bytes) -> None:
    # A hook that never reads its input, or exits first, is not an error.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(body)
        await stdin.drain()
    stdin.close()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        await stdin.wait_closed()


async def _read_capped(stream: asyncio.StreamReader) -> bytes:
    """Up to :data:`OUTPUT_CAP` bytes; the rest is read and dropped so the hook never
    blocks on a full pipe."""
    kept = bytearray()
    while chunk := await stream.read(65_536):
        if len(kept) < OUTPUT_CAP:
            kept += chunk[: OUTPUT_CAP - len(kept)]
    return bytes(kept)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


async def _post(handler: HookHandler, body: bytes) -> Reply:
    import httpx  # with the first HTTP hook: opening the platform never needs it

    headers = {"content-type": "application/json", **handler.headers}
    try:
        async with (
            httpx.AsyncClient(timeout=handler.timeout_s, follow_redirects=False) as client,
            asyncio.timeout(handler.timeout_s),
            client.stream("POST", handler.url, content=body, headers=headers) as response,
        ):
            kept = bytearray()
            async for chunk in response.aiter_bytes():
                kept += chunk[: OUTPUT_CAP - len(kept)]
                if len(kept) >= OUTPUT_CAP:
                    break
    except TimeoutError:
        raise HookFailure(f"timed out after {handler.timeout_s:g} s") from None
    except httpx.HTTPError as exc:
        raise HookFailure(f"the request failed: {type(exc).__name__}: {exc}") from None
    if not 200 <= response.status_code < 300:
        raise HookFailure(f"answered HTTP {response.status_code}")
    return Reply(exit_code=0, stdout=_text(bytes(kept)))
