"""One connected MCP server (stdio or streamable HTTP), kept alive by a supervisor task.

The supervisor owns the SDK's transport and session (both are context managers that must
be entered and left in one task); calls from any task use the live session. When the server
process ends — on its own or in the middle of a call — the pending call fails at once with
``mcp_server_gone`` (the SDK wakes every waiter with CONNECTION_CLOSED), and the supervisor
starts the server again after a back-off that doubles up to a ceiling. Nothing waits on a
dead server: a call while it is down is refused with ``mcp_unavailable``.

A server over HTTP that needs OAuth is ``authorizing`` while a person has the authorization
URL: :meth:`McpConnection.authorizing` lifts the connect deadline until the code comes back.

What a server asks of the client: ``roots/list`` is answered with the roots of the users
being served (:mod:`corral.connect.mcp_roots`). Elicitation and sampling are put to the
:class:`CallAsker` of the call in flight (the person behind it; its run's model): a request
outside a call, or while calls of several people run at once, is refused with an error that
says why (never left waiting), and sampling is refused unless the connection allows it
(``allow_sampling``, an admin's choice per server). What it tells: ``tools/list_changed`` (and
the prompt and resource lists') is listed again at once, log messages go to ``on_log``, a
call's progress to the caller's ``progress``. A call cancelled by its caller is cancelled
at the server too (the SDK sends ``notifications/cancelled``).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from corral.connect.mcp_roots import Roots, RootsGate
from corral.errors import ToolError
from corral.files import open_for_append

if TYPE_CHECKING:  # the SDK is imported where a server is used: it costs ~0.7 s at start-up
    from mcp import ClientSession
    from mcp.client.session import ClientRequestContext, IncomingMessage
    from mcp.types import (
        CallToolResult,
        CreateMessageRequestParams,
        CreateMessageResult,
        ElicitRequestParams,
        ElicitResult,
        ErrorData,
        ListRootsResult,
        LoggingMessageNotificationParams,
        Prompt,
        ReadResourceResult,
        Resource,
        ResourceTemplate,
        Tool,
    )

__all__ = [
    "Backoff",
    "CallAsker",
    "HelperNetwork",
    "McpConnection",
    "McpState",
    "Opener",
    "stdio_opener",
]

log = logging.getLogger("corral.connect.mcp")

McpState = Literal["connecting", "authorizing", "connected", "down", "closed"]
Opener = Callable[[], AbstractAsyncContextManager[Any]]
"""Opens the transport: yields the SDK's (read, write) streams."""


class HelperNetwork(Protocol):
    """A helper's own network (the shell's egress side provides it): wraps the argv, adds
    to the environment, and is finished after the process ended."""

    @property
    def env(self) -> dict[str, str]: ...

    def wrap(self, argv: Sequence[str], cwd: str) -> list[str]: ...

    def spawned(self) -> None: ...

    async def finish(self) -> None: ...


class Progress(Protocol):
    """Hears a call's progress notifications."""

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        """``progress`` of ``total`` (if known), with the server's ``message``."""


class CallAsker(Protocol):
    """Whom a server's requests during a call go to: the person behind the call (``person``,
    a user id) for elicitation, their run's model for sampling."""

    @property
    def person(self) -> str:
        """The user id of the person asked."""
        ...

    async def elicit(self, server: str, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        """The person's answer to the server's elicitation, or why there is none."""
        ...

    async def sample(
        self, server: str, params: CreateMessageRequestParams
    ) -> CreateMessageResult | ErrorData:
        """The run's model's answer to the server's sampling request, or why there is none."""
        ...


_CONNECTION_CLOSED = -32000
_REQUEST_TIMEOUT = -32001
_ROOTS_ASKED_WITHIN = 5.0
"""Seconds a server that asks for roots is given to ask again after being told they changed."""
_ROOTS_SETTLE = 0.2
"""Seconds a server that asked for its new roots is given to take them in."""
_NO_SAMPLING = (
    "sampling is not allowed for this MCP server: Corral's model answers a server only when "
    "an admin allows it for the server (connection field sampling: 'true'); do the work "
    "without it or return what you need as the tool's result"
)
_NO_CALL = (
    "{what} is only answered during a tool call Corral made (someone to ask); ask while "
    "handling a call, or take what you need as tool arguments"
)
_SEVERAL_PEOPLE = (
    "{what} cannot be answered now: calls of several people are running on this server at "
    "once and Corral cannot tell whose call asks; try again when the others have finished"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Backoff:
    """Seconds to wait before reconnecting: ``first``, doubling, at most ``ceiling``."""

    first: float = 0.5
    ceiling: float = 30.0

    def delay(self, attempt: int) -> float:
        return float(min(self.ceiling, self.first * (2 ** min(attempt, 16))))


def stdio_opener(
    command: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    errlog: Path,
    network: Callable[[], Awaitable[HelperNetwork | None]] | None = None,
) -> Opener:
    """Start ``command`` as a stdio MCP server; its stderr is appended to ``errlog``.

    With ``network`` each start runs under the shell's egress policy (a network namespace
    of its own, with the egress proxy when the policy allows some domain)."""
    from mcp.client.stdio import StdioServerParameters, stdio_client

    @contextlib.asynccontextmanager
    async def opened() -> Any:
        errlog.parent.mkdir(parents=True, exist_ok=True)
        confined = None if network is None else await network()
        argv, variables = list(command), dict(env)
        if confined is not None:
            argv, variables = confined.wrap(argv, str(cwd)), {**variables, **confined.env}
            confined.spawned()  # the path handoff: the platform listens before the start
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=variables, cwd=cwd)
        try:
            # The server may write in its folder: a link it left as its log is never followed.
            raw = open_for_append(errlog.parent, errlog, mode=0o600)
            with io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8") as sink:
                async with stdio_client(params, errlog=sink) as streams:
                    yield streams
        finally:
            if confined is not None:
                await confined.finish()

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
        on_log: Callable[[str], None] = lambda line: None,
        roots: Roots = (),
        call_timeout: float = 300.0,
        connect_timeout: float = 30.0,
        backoff: Backoff | None = None,
        allow_sampling: bool = False,
    ) -> None:
        self.name = name
        self.allow_sampling = allow_sampling
        """Whether the server may ask the calling run's model for completions (sampling)."""
        self._askers: dict[int, CallAsker] = {}
        """The askers of the calls in flight, in the order they started."""
        self._calls_started = 0
        self._opener = opener
        self._on_tools = on_tools
        self._on_log = on_log
        self._roots = RootsGate(self._announce_roots, initial=roots)
        self._roots_asked = 0
        """How many times the server asked for the roots (``roots/list``)."""
        self._asks_again: bool | None = None
        """Whether the server asks for its roots again when told they changed (None: not
        seen yet)."""
        self.prompts: list[Prompt] = []
        self.resources: list[Resource] = []
        self.resource_templates: list[ResourceTemplate] = []
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

    @property
    def call_timeout(self) -> float:
        """Seconds a call may take, a person's answer to the server's question included."""
        return self._call_timeout

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

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        roots: Roots | None = None,
        progress: Progress | None = None,
        asker: CallAsker | None = None,
    ) -> CallToolResult:
        """Call ``tool`` with the server told ``roots`` (None: leave them), its elicitation
        and sampling put to ``asker``; a dead, slow or failing server, or an answer that
        breaks the tool's output schema, is a :class:`ToolError` with a code."""
        self._calls_started += 1
        key = self._calls_started
        if asker is not None:
            self._askers[key] = asker
        try:
            async with self._roots.using(roots):
                return await self._call(tool, arguments, progress)
        finally:
            self._askers.pop(key, None)

    async def read_resource(self, uri: str, *, roots: Roots | None = None) -> ReadResourceResult:
        """Read the resource at ``uri`` (listed, or made from one of the server's templates)."""
        session = self._live_session()
        from mcp.shared.exceptions import MCPError

        async with self._roots.using(roots):
            try:
                return await session.read_resource(uri)
            except MCPError as exc:
                raise self._refusal(exc, f"resource {uri!r}") from None

    def _live_session(self) -> ClientSession:
        session = self._session
        if self.state == "authorizing" or self._authorization_lost:
            raise self._needs_authorization()
        if session is None or self.state != "connected":
            raise ToolError(
                f"MCP server {self.name!r} is not connected ({self.last_error or self.state}); "
                "it is restarted automatically: try again shortly, or check it with connect",
                code="mcp_unavailable",
            )
        return session

    async def _call(
        self, tool: str, arguments: dict[str, Any], progress: Progress | None
    ) -> CallToolResult:
        session = self._live_session()
        from mcp.shared.exceptions import MCPError

        try:
            return await session.call_tool(
                tool,
                arguments,
                read_timeout_seconds=self._call_timeout,
                progress_callback=progress,
            )
        except MCPError as exc:
            raise self._refusal(exc, repr(tool)) from None
        except RuntimeError as exc:
            # The SDK checks structuredContent against the tool's outputSchema.
            raise ToolError(
                f"MCP server {self.name!r} answered {tool!r} with output that breaks the "
                f"tool's own output schema ({str(exc)[:300]}); the answer was not used. Try "
                "other arguments, or report it to the server's maintainers",
                code="mcp_bad_output",
            ) from None

    def _refusal(self, exc: Any, what: str) -> ToolError:
        """The :class:`ToolError` for the SDK's ``MCPError`` ``exc`` on ``what``."""
        if exc.code == _CONNECTION_CLOSED and self._authorization_lost:
            return self._needs_authorization()
        if exc.code == _CONNECTION_CLOSED:
            self._lost("the server process ended during a call")
            return ToolError(
                f"MCP server {self.name!r} stopped while running {what}; the call may or "
                "may not have taken effect. It is being restarted: check its state before "
                "calling again",
                code="mcp_server_gone",
            )
        if exc.code == _REQUEST_TIMEOUT:
            return ToolError(
                f"MCP server {self.name!r} did not answer {what} within "
                f"{self._call_timeout:g} s; try again later",
                code="mcp_timeout",
            )
        return ToolError(
            f"MCP server {self.name!r} refused {what}: {exc.error.message}",
            code="mcp_error",
        )

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

        async with self._opener() as (read, write):
            opened = ClientSession(
                read,
                write,
                list_roots_callback=self._list_roots,
                logging_callback=self._log,
                message_handler=self._notified,
                sampling_callback=self._sample,
                elicitation_callback=self._elicit,
            )
            async with opened as session:
                await self._serve(session)
        if not self._closing.is_set() and not self.last_error:
            self.last_error = "the server process ended"

    async def _serve(self, session: ClientSession) -> None:
        async with asyncio.timeout(self._connect_timeout) as deadline:
            self._deadline = deadline
            try:
                await session.initialize()
                tools = await _all_tools(session)
                await self._list_the_rest(session)
                if self._roots_asked:  # while it started: give it time to take them in
                    await self._roots_taken_in(session)
            finally:
                self._deadline = None
        self.tools = tools
        self._on_tools(tools)
        self._session = session
        self.connections += 1
        self.last_error = self._authorization_lost = ""
        self._set_state("connected")
        await self._ended.wait()

    async def _list_the_rest(self, session: ClientSession) -> None:
        """Prompts, resources and resource templates, for a server that offers them, and
        the log level (info) for one that logs."""
        from mcp.shared.exceptions import MCPError

        offered = session.server_capabilities
        if offered is None:
            return
        with contextlib.suppress(MCPError):
            if offered.logging is not None:
                await session.set_logging_level("info")
        with contextlib.suppress(MCPError):
            self.prompts = list((await session.list_prompts()).prompts) if offered.prompts else []
        with contextlib.suppress(MCPError):
            if offered.resources is not None:
                self.resources = list((await session.list_resources()).resources)
                listed = await session.list_resource_templates()
                self.resource_templates = list(listed.resource_templates)

    # -- what the server asks and tells --------------------------------------------------

    async def _list_roots(self, context: ClientRequestContext) -> ListRootsResult:
        from mcp.types import ListRootsResult, Root

        self._roots_asked += 1
        self._changed.set()
        return ListRootsResult(roots=[Root(uri=uri) for uri in self._roots.current])

    async def _announce_roots(self, roots: Roots) -> None:
        """Tell the server its roots changed; a server that asked for them before is given
        time to ask again, so the call that follows finds them in place."""
        session = self._session
        if session is None:
            return  # the server asks for them when it connects
        asked = self._roots_asked
        from mcp.shared.exceptions import MCPDeprecationWarning

        with warnings.catch_warnings():
            # Deprecated by the 2026-07-28 revision, yet what 2025-11-25 servers (the reference
            # filesystem server among them) take their allowed folders from.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await session.send_roots_list_changed()
        if asked == 0 or self._asks_again is False:
            return  # it never asked, or asks when it needs them rather than when told
        try:
            async with asyncio.timeout(_ROOTS_ASKED_WITHIN):
                await self.wait_until(lambda: self._roots_asked > asked or self._session is None)
        except TimeoutError:
            self._asks_again = False
            self._on_log(
                f"corral: the server did not ask for its new roots within "
                f"{_ROOTS_ASKED_WITHIN:g} s; it is not waited for again"
            )
            return
        self._asks_again = True
        await self._roots_taken_in(session)

    async def _roots_taken_in(self, session: ClientSession) -> None:
        """The protocol has no word for "roots applied": a server takes them in after its
        request returned (the filesystem server checks each folder first). A round trip and
        a short pause let it finish before the call that needs them."""
        from mcp.shared.exceptions import MCPError

        with contextlib.suppress(MCPError):
            await session.send_ping()
        await asyncio.sleep(_ROOTS_SETTLE)

    async def _log(self, params: LoggingMessageNotificationParams) -> None:
        data = params.data if isinstance(params.data, str) else json.dumps(params.data)
        where = f" {params.logger}" if params.logger else ""
        self._on_log(f"[{params.level}{where}] {data}")

    async def _notified(self, message: IncomingMessage) -> None:
        from mcp.types import (
            PromptListChangedNotification,
            ResourceListChangedNotification,
            ToolListChangedNotification,
        )

        session = self._session
        if session is None:
            return
        from mcp.shared.exceptions import MCPError

        try:
            if isinstance(message, ToolListChangedNotification):
                self.tools = await _all_tools(session)
                self._on_tools(self.tools)
                self._on_log("corral: the server's tool list changed; listed again")
            elif isinstance(
                message, PromptListChangedNotification | ResourceListChangedNotification
            ):
                await self._list_the_rest(session)
                self._on_tools(self.tools)  # the resource reader's listing changes with them
        except MCPError as exc:
            self._on_log(f"corral: listing again after a change failed: {exc.error.message}")
        self._changed.set()

    async def _sample(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult | ErrorData:
        if not self.allow_sampling:
            return self._refused("sampling", _NO_SAMPLING)
        from mcp.types import ErrorData

        asker = self._asker("sampling")
        if isinstance(asker, ErrorData):
            return asker
        self._on_log("corral: the server asked for sampling; the calling run's model answers")
        return await asker.sample(self.name, params)

    async def _elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        from mcp.types import ErrorData

        asker = self._asker("elicitation")
        if isinstance(asker, ErrorData):
            return asker
        self._on_log("corral: the server asked the user a question (elicitation)")
        return await asker.elicit(self.name, params)

    def _asker(self, what: str) -> CallAsker | ErrorData:
        """The asker of the call in flight, or the refusal saying why there is none."""
        askers = list(self._askers.values())
        if not askers:
            return self._refused(what, _NO_CALL.format(what=what))
        if len({asker.person for asker in askers}) > 1:
            return self._refused(what, _SEVERAL_PEOPLE.format(what=what))
        return askers[-1]

    def _refused(self, what: str, why: str) -> ErrorData:
        from mcp.types import INVALID_REQUEST, ErrorData

        self._on_log(f"corral: refused the server's {what} request")
        return ErrorData(code=INVALID_REQUEST, message=why)


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
