"""web_search: the provider broker over the hardened fetch pipeline, rendered for the model."""

from __future__ import annotations

from typing import Any

from corral.errors import InvalidArguments, ToolError
from corral.tools.context import CallContext
from corral.tools.results import TextBlock, ToolResult
from corral.tools.services import Web
from corral.web.search import (
    DomainFilter,
    SearchBroker,
    SearchConfig,
    SearchEnv,
    SearchRequest,
    default_broker,
    research,
)
from corral.web.search.outcome import ProviderReport
from corral.web.search.render import render_research, render_search

__all__ = ["web_search"]

_DEFAULT_BROKER = default_broker()


def _access(ctx: CallContext) -> Web:
    if ctx.services.web is None:
        raise ToolError("web access is not configured on this platform", code="unavailable")
    return ctx.services.web


def _nobody_answered(reports: list[ProviderReport]) -> bool:
    return not any(r.status in ("answered", "empty") for r in reports)


async def web_search(args: dict[str, Any], ctx: CallContext) -> ToolResult:
    query = " ".join(str(args["query"]).split())
    if not query:
        raise InvalidArguments("query is blank; write what to search for")
    request = SearchRequest(
        query=query,
        max_results=int(args.get("max_results", 10)),
        time_range=args.get("time_range"),
        domains=DomainFilter.parse(args.get("allow_domains"), args.get("block_domains")),
    )
    env = SearchEnv(
        fetcher=_access(ctx).fetcher(ctx.live),
        settings=ctx.settings,
        config=SearchConfig.from_live(ctx.live),
        credentials=ctx.services.credentials,
        conversation_model=ctx.services.conversation_model,
        usage=ctx.services.usage,
        user_id=ctx.caller.user_id,
        conversation_id=ctx.conversation_id,
        run_id=ctx.run_id,
    )
    # A platform may provide its own broker (a seam for fakes) as an extra service.
    broker = ctx.services.get(SearchBroker) or _DEFAULT_BROKER
    strategy = args.get("strategy", "auto")
    fetch_top = int(args.get("fetch_top", 0))
    if args.get("mode", "standard") == "research":
        found = await research(broker, request, strategy, env, fetch_top=fetch_top)
        text, data = render_research(found)
        failed = _nobody_answered(found.reports)
    else:
        outcome = await broker.search(request, strategy, env)
        if fetch_top:
            outcome.warnings.append(
                f"fetch_top={fetch_top} was skipped: page text is attached in research mode "
                'only (mode: "research"); read a page with web_fetch instead'
            )
        text, data = render_search(outcome)
        failed = _nobody_answered(outcome.reports)
    if failed:
        return ToolResult(
            content=[TextBlock(text)],
            data=data,
            is_error=True,
            error_code="search_unavailable",
            status="error",
        )
    return ToolResult(content=[TextBlock(text)], data=data)
