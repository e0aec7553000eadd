"""One connected MCP server (stdio or streamable HTTP), kept alive by a supervisor task.

The supervisor owns the SDK's transport and session (both are context managers that must
be entered and left in one task); calls from any task use the live session. When the server
process ends — on its own or in the middle of a call — the pending call fails at once with
``mcp_server_gone`` (the SDK wakes every waiter with CONNECTION_CLOSED), and the supervisor
starts the server again after a back-off that doubles up to a ceiling. Nothing waits on a
dead server: a call while it is down is refused with ``mcp_unavailable``.

A server over HTTP that needs OAuth is ``authorizing`` while a person has the authorization
URL: :meth:`McpConnection.authorizing` lifts the connect deadline until the code comes back.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from corral.errors import ToolError
from corral.files import open_for_append

if TYPE_CHECKING:  # the SDK is imported where a server is used: it costs ~0.7 s at start-up
    from mcp import ClientSession
    from mcp.types import CallToolResult, Tool

__all__ = ["Backoff", "McpConnection", "McpState", "Opener", "stdio_opener"]

log = logging.getLogger("corral.connect.mcp")

McpState = Literal["connecting", "authorizing", "connected", "down", "closed"]
Opener = Callable[[], AbstractAsyncContextManager[Any]]
"""Opens the transport: yields the SDK's (read, write) streams."""
_CONNECTION_CLOSED = -32000
_REQUEST_TIMEOUT = -32001


@dataclass(frozen=True, slots=True, kw_only=True)
class Backoff:
    """Seconds to wait before reconnecting: ``first``, doubling, at most ``ceiling``."""

    first: float = 0.5
    ceiling: float = 30.0

    def delay(self, attempt: int) -> float:
        return float(min(self.ceiling, self.first * (2 ** min(attempt, 16))))


def stdio_opener(
    command: Sequence[str], *, env: Mapping[str, str], cwd: Path, errlog: Path
) -> Opener:
    """Start ``command`` as a stdio MCP server; its stderr is appended to ``errlog``."""
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=command[0], args=list(command[1:]), env=dict(env), cwd=cwd
    )

    @contextlib.asynccontextmanager
    async def opened() -> Any:
        errlog.parent.mkdir(parents=True, exist_ok=True)
        # The server may write in its folder: a link it left as its log is never followed.
        raw = open_for_append(errlog.parent, errlog, mode=0o600)
        with io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8") as sink:
            async with stdio_client(params, errlog=sink) as streams:
                yield streams

    return opened


class McpConnection:
    """An MCP server: started by :meth:`start`, reconnected when it dies, ended by
    :meth:`close`. ``on_tools`` hears the tool list after every (re)connection."""

    def __init__(
        self,
        name: str,
        opener: Opener,
        *,
        on_tools: Callable[[list[Tool]], None] = lambda tools: None,
        call_timeout: float = 300.0,
        connect_timeout: float = 30.0,
        backoff: Backoff | None = None,
    ) -> None:
        self.name = name
        self._opener = opener
        self._on_tools = on_tools
        self._call_timeout = call_timeout
        self._connect_timeout = connect_timeout
        self._backoff = backoff or Backoff()
        self.state: McpState = "connecting"
        self.tools: list[Tool] = []
        self.last_error = ""
        self.connections = 0
        """How many times the server was connected (1 after the first start)."""
        self._session: ClientSession | None = None
        self._ended = asyncio.Event()
        self._closing = asyncio.Event()
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._gave_up = False
        self._deadline: asyncio.Timeout | None = None
        self._authorization_lost = ""
        """Why the stored OAuth authorization stopped working, until a person renews it."""

    async def start(self) -> None:
        """Start the server and wait for its first connection; a server that cannot start
        is an ``mcp_unavailable`` error (and nothing keeps retrying it)."""
        self._task = asyncio.create_task(self._supervise(), name=f"mcp:{self.name}")
        await self.wait_settled()
        if self.state not in ("connected", "authorizing"):
            await self.close()
            raise ToolError(
                f"MCP server {self.name!r} did not start: {self.last_error or 'no answer'}; "
                "check the command or URL (it must speak MCP) and try again",
                code="mcp_unavailable",
            )

    async def wait_settled(self, *, connected_at_least: int = 1) -> None:
        """Wait until the server is connected ``connected_at_least`` times in all, or its
        first start failed, or it was closed (how start and tests synchronise)."""
        while not (
            (self.connections >= connected_at_least and self.state == "connected")
            or self._gave_up
            or self.state in ("closed", "authorizing")
        ):
            self._changed.clear()
            await self._changed.wait()

    async def wait_until(self, done: Callable[[], bool]) -> None:
        """Wait until ``done()`` holds, asked again at every change of state."""
        while not done():
            self._changed.clear()
            await self._changed.wait()

    async def call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        """Call ``tool``; a dead, slow or failing server is a :class:`ToolError` with a code."""
        session = self._session
        if self.state == "authorizing" or self._authorization_lost:
            raise self._needs_authorization()
        if session is None or self.state != "connected":
            raise ToolError(
                f"MCP server {self.name!r} is not connected ({self.last_error or self.state}); "
                "it is restarted automatically: try again shortly, or check it with connect",
                code="mcp_unavailable",
            )
        from mcp.shared.exceptions import MCPError

        try:
            return await session.call_tool(tool, arguments, read_timeout_seconds=self._call_timeout)
        except MCPError as exc:
            if exc.code == _CONNECTION_CLOSED and self._authorization_lost:
                raise self._needs_authorization() from None
            if exc.code == _CONNECTION_CLOSED:
                self._lost("the server process ended during a call")
                raise ToolError(
                    f"MCP server {self.name!r} stopped while running {tool!r}; the call may or "
                    "may not have taken effect. It is being restarted: check its state before "
                    "calling again",
                    code="mcp_server_gone",
                ) from None
            if exc.code == _REQUEST_TIMEOUT:
                raise ToolError(
                    f"MCP server {self.name!r} did not answer {tool!r} within "
                    f"{self._call_timeout:g} s; try again later",
                    code="mcp_timeout",
                ) from None
            raise ToolError(
                f"MCP server {self.name!r} refused {tool!r}: {exc.error.message}",
                code="mcp_error",
            ) from None

    def _needs_authorization(self) -> ToolError:
        why = self._authorization_lost or f"MCP server {self.name!r} needs authorization first"
        return ToolError(
            f"{why}. Ask the user to start it with connect authorize and open the link they "
            "are shown",
            code="mcp_needs_authorization",
        )

    def may_wait_for_person(self) -> bool:
        """True while the connection is being opened: a person may be waited for then, never
        in the middle of a call."""
        return self.state in ("connecting", "authorizing") and not self._closing.is_set()

    def authorization_lost(self, why: str) -> None:
        """The server refused the stored authorization and refreshing it failed: calls are
        refused with ``why`` until a person authorized again."""
        self._authorization_lost = why
        self.last_error = why

    def authorizing(self) -> None:
        """A person must authorize first: no deadline until they have (the state says so)."""
        if self._deadline is not None:
            self._deadline.reschedule(None)
        self._set_state("authorizing")

    def authorized(self) -> None:
        """The code is back: the rest of the connection has the usual deadline again."""
        if self._deadline is not None:
            self._deadline.reschedule(asyncio.get_running_loop().time() + self._connect_timeout)
        self._set_state("connecting")

    async def close(self) -> None:
        """Stop the server and the supervisor."""
        self._closing.set()
        self._ended.set()
        if self._task is not None:
            if self.state == "authorizing":
                # Parked on a person who may never come: nothing else would end the wait.
                self._task.cancel()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await self._task
        self._set_state("closed")

    # -- the supervisor ----------------------------------------------------------------

    def _lost(self, why: str) -> None:
        self.last_error = why
        self._session = None
        self._set_state("down")
        self._ended.set()

    def _set_state(self, state: McpState) -> None:
        self.state = state
        self._changed.set()

    async def _supervise(self) -> None:
        attempt = 0
        while not self._closing.is_set():
            self._ended = asyncio.Event()
            try:
                await self._connect_once()
                attempt = 0
            except Exception as exc:
                self.last_error = self._authorization_lost or _describe(exc)
                log.warning("MCP server %r: %s", self.name, self.last_error)
            self._session = None
            if self._closing.is_set():
                break
            # Never started: the caller is told, and nothing retries a bad command.
            self._gave_up = self.connections == 0
            self._set_state("down")
            if self._gave_up:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), self._backoff.delay(attempt))
            attempt += 1
            self._set_state("connecting")

    async def _connect_once(self) -> None:
        from mcp import ClientSession

        async with self._opener() as (read, write), ClientSession(read, write) as session:
            async with asyncio.timeout(self._connect_timeout) as deadline:
                self._deadline = deadline
                try:
                    await session.initialize()
                    tools = await _all_tools(session)
                finally:
                    self._deadline = None
            self.tools = tools
            self._on_tools(tools)
            self._session = session
            self.connections += 1
            self.last_error = self._authorization_lost = ""
            self._set_state("connected")
            await self._ended.wait()
        if not self._closing.is_set() and not self.last_error:
            self.last_error = "the server process ended"


async def _all_tools(session: ClientSession) -> list[Tool]:
    from mcp.types import PaginatedRequestParams

    listed = await session.list_tools()
    tools = list(listed.tools)
    while listed.next_cursor:
        listed = await session.list_tools(params=PaginatedRequestParams(cursor=listed.next_cursor))
        tools.extend(listed.tools)
    return tools


def _describe(exc: BaseException) -> str:
    """The innermost failure of ``exc``: task groups wrap the one that matters."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"
