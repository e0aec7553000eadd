"""``POST /tools/{name}/call`` answered without FastAPI's per-request machinery.

Under HTTP load this is the route that is hit, and FastAPI spent about two thirds of its
time in the app (routing, resolving the dependency tree, reading and validating the body a
second time, its exception and exit-stack middleware) against ~50 µs for the work itself.
:class:`FastToolCalls`, the innermost of the app's middleware, answers the ordinary call
itself: a ``Bearer`` credential, an ``application/json`` body that :class:`StrictJsonBodies`
already parsed and that the route's own body model takes. It authenticates with the route's
own dependency, runs the route's own function, serialises with the route's own response
field and answers errors through the app's own exception handlers, so every answer is the
route's. Anything else (another path or method, no credential or another scheme, another
content type, an empty body, a body the model refuses) goes on to the FastAPI route, which
answers it as before and stays the operation the OpenAPI document describes.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import ResponseValidationError
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials
from pydantic import ValidationError
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from corral.server.deps import get_person
from corral.server.routes.tools import ToolCall, call_tool, router
from corral.server.strict_bodies import PARSED_BODY

__all__ = ["FastToolCalls"]

_PATH = re.compile(r"/tools/([^/]+)/call")  # Starlette's ``{name}``: one non-empty segment
_JSON = b"application/json"


class FastToolCalls:
    """ASGI middleware taking the ordinary tool call off ``api``'s FastAPI route."""

    def __init__(self, app: ASGIApp, api: FastAPI) -> None:
        self.app = app
        self.api = api
        self._answer: ASGIApp | None = None
        self._route: APIRoute | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        taken = _taken(scope)
        if taken is None:
            await self.app(scope, receive, send)
            return
        name, credentials, body = taken
        try:
            call = ToolCall.model_validate(body)
        except ValidationError:  # the route answers with its own 422
            await self.app(scope, receive, send)
            return
        scope["path_params"] = {"name": name}
        scope["corral.fast_call"] = (name, credentials, call)
        if self._answer is None:
            self._answer = self._with_handlers()
        await self._answer(scope, receive, send)

    def _with_handlers(self) -> ASGIApp:
        """:meth:`_call` behind the handlers FastAPI's own ``ExceptionMiddleware`` has (it
        gives 500 and ``Exception`` to the outermost error middleware instead)."""
        handlers = {
            key: value
            for key, value in self.api.exception_handlers.items()
            if key not in (500, Exception)
        }
        return ExceptionMiddleware(self._call, handlers=handlers, debug=self.api.debug)

    async def _call(self, scope: Scope, receive: Receive, send: Send) -> None:
        name, credentials, call = scope.pop("corral.fast_call")
        request = Request(scope, receive)
        caller = await get_person(request, credentials)
        content = await call_tool(name, call, request, caller)
        field = self._response_field()
        value, errors = field.validate(content, {}, loc=("response",))
        if errors:  # never for a dict; raised as the route raises it
            raise ResponseValidationError(errors, body=content)
        response = Response(
            content=field.serialize_json(value, by_alias=True), media_type="application/json"
        )
        await response(scope, receive, send)

    def _response_field(self) -> Any:
        if self._route is None:
            self._route = next(
                route
                for route in router.routes
                if isinstance(route, APIRoute) and route.endpoint is call_tool
            )
        return self._route.response_field


def _taken(scope: Scope) -> tuple[str, HTTPAuthorizationCredentials, Any] | None:
    """The tool name, credentials and parsed body of a request this path answers, or None."""
    if (
        scope["type"] != "http"
        or scope["method"] != "POST"
        or scope.get("root_path")
        or PARSED_BODY not in scope
    ):
        return None
    matched = _PATH.fullmatch(scope["path"])
    if matched is None:
        return None
    content_type = authorization = None
    for key, value in scope["headers"]:  # the first of each, as Starlette's Headers.get
        if key == b"content-type" and content_type is None:
            content_type = value
        elif key == b"authorization" and authorization is None:
            authorization = value
    if content_type is None or content_type.lower() != _JSON or authorization is None:
        return None
    # As fastapi.security.HTTPBearer reads it; anything it refuses, the route answers.
    scheme, _, param = authorization.decode("latin-1").partition(" ")
    credentials = param.strip()
    body = scope[PARSED_BODY]
    if scheme.lower() != "bearer" or not credentials or not isinstance(body, dict):
        return None
    return (
        matched.group(1),
        HTTPAuthorizationCredentials(scheme=scheme, credentials=credentials),
        body,
    )
