"""The broker: runs a strategy over the providers, falls back, filters and fuses.

- ``auto`` walks the administrator's order (``web_search_auto_order``): providers that
  cannot run here are skipped with their reason, the first ``web_search_auto_providers``
  that can are asked together, and each one that fails or comes up empty hands its turn
  to the next in the order. Every answer is fused (:mod:`.fusion`).
- ``native``, ``tavily``, ``brave``, ``searxng`` ask that one provider.
- Whatever the strategy, when no provider produced a usable result the keyless engine is
  asked, and its report carries the reasons the others dropped out.

Every answer passes the domain filters on the way back, whether or not the provider
applied them itself; a provider whose results the filters removed entirely counts as empty.
Provider failures never escape: each becomes a report with its reason, and a timeout also
becomes a warning.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import anyio

from corral.web.fetch import FetchError

from .domains import FilterName
from .env import SearchEnv
from .fusion import fuse
from .hits import Hit
from .outcome import ProviderReport, Role, SearchOutcome
from .provider import ProviderAnswer, ProviderFailed, ProviderSkipped, SearchProvider
from .request import SearchRequest, Strategy

__all__ = ["SearchBroker"]

_GRACE_S = 0.25


def _filtered(
    hits: Sequence[Hit], request: SearchRequest
) -> tuple[tuple[Hit, ...], dict[FilterName, int]]:
    if not request.domains.active:
        return tuple(hits[: request.max_results]), {}
    kept: list[Hit] = []
    removed: dict[FilterName, int] = {}
    for hit in hits:
        refusal = request.domains.refusal(hit.url)
        if refusal is None:
            kept.append(hit)
        else:
            removed[refusal] = removed.get(refusal, 0) + 1
    return tuple(kept[: request.max_results]), removed


class SearchBroker:
    """Strategies over a set of providers, with ``keyless`` as the last resort."""

    def __init__(self, providers: Mapping[str, SearchProvider], *, keyless: SearchProvider) -> None:
        self.providers = dict(providers)
        self.keyless = keyless

    # -- strategies ------------------------------------------------------------------------

    async def search(
        self, request: SearchRequest, strategy: Strategy, env: SearchEnv
    ) -> SearchOutcome:
        """Run ``strategy`` for ``request``, falling back to the keyless engine if needed."""
        warnings: list[str] = []
        if strategy == "auto":
            lane = list(env.config.auto_order)
            want = max(1, env.config.auto_providers)
            if env.config.unknown_in_order:
                warnings.append(
                    "web_search_auto_order names unknown providers, ignored: "
                    + ", ".join(env.config.unknown_in_order)
                )
            if not lane:
                warnings.append(
                    "web_search_auto_order lists no provider; only the keyless engine ran"
                )
        else:
            lane, want = [strategy], 1
        reports = await self.walk(lane, request, env, want=want, role="primary")
        if not any(r.hits for r in reports):
            reports.append(await self.attempt(self.keyless, request, env, role="fallback"))
        answered = [r.hits for r in reports if r.hits]
        results = fuse(answered)[: request.max_results]
        warnings.extend(w for r in reports for w in r.warnings)
        return SearchOutcome(
            request=request, strategy=strategy, results=results, reports=reports, warnings=warnings
        )

    async def walk(
        self,
        lane: Sequence[str],
        request: SearchRequest,
        env: SearchEnv,
        *,
        want: int,
        role: Role,
    ) -> list[ProviderReport]:
        """Ask providers of ``lane`` in order until ``want`` of them produced results."""
        pending = list(lane)
        done: dict[str, ProviderReport] = {}
        answered = 0
        while pending and answered < want:
            batch: list[SearchProvider] = []
            while pending and len(batch) < want - answered:
                provider = self.providers.get(pending.pop(0))
                if provider is None:
                    continue
                skipped = await self.readiness(provider, request, env, role=role)
                if skipped is not None:
                    done[provider.name] = skipped
                else:
                    batch.append(provider)
            if not batch:
                break
            for report in await self._together(batch, request, env, role=role):
                done[report.provider] = report
                answered += bool(report.hits)
        for name in pending:
            provider = self.providers.get(name)
            if provider is None:
                continue
            skipped = await self.readiness(provider, request, env, role=role)
            done[name] = skipped or ProviderReport(
                provider=name,
                status="standby",
                role=role,
                query=request.query,
                paid=provider.paid,
                reason=f"not needed: {answered} provider(s) answered (web_search_auto_providers)",
            )
        order = {name: index for index, name in enumerate(lane)}
        return sorted(done.values(), key=lambda r: order.get(r.provider, len(order)))

    async def _together(
        self, batch: Sequence[SearchProvider], request: SearchRequest, env: SearchEnv, *, role: Role
    ) -> list[ProviderReport]:
        reports: list[ProviderReport | None] = [None] * len(batch)

        async def one(index: int, provider: SearchProvider) -> None:
            reports[index] = await self.attempt(provider, request, env, role=role)

        async with anyio.create_task_group() as group:
            for index, provider in enumerate(batch):
                group.start_soon(one, index, provider)
        return [r for r in reports if r is not None]

    # -- one provider ----------------------------------------------------------------------

    @staticmethod
    async def readiness(
        provider: SearchProvider, request: SearchRequest, env: SearchEnv, *, role: Role
    ) -> ProviderReport | None:
        """``None`` when ``provider`` can run here, else the report of why it was skipped."""
        try:
            await provider.ready(env)
        except ProviderSkipped as skip:
            return ProviderReport(
                provider=provider.name,
                status=skip.kind,
                role=role,
                query=request.query,
                paid=provider.paid,
                reason=skip.reason,
            )
        return None

    async def attempt(
        self, provider: SearchProvider, request: SearchRequest, env: SearchEnv, *, role: Role
    ) -> ProviderReport:
        """Ask one provider, within its time budget, and report how it went."""
        skipped = await self.readiness(provider, request, env, role=role)
        if skipped is not None:
            return skipped
        budget = env.config.timeout_for(provider.name)
        started = time.perf_counter()
        report = ProviderReport(
            provider=provider.name,
            status="failing",
            role=role,
            query=request.query,
            paid=provider.paid,
            requests=1,
        )
        answer: ProviderAnswer | None = None
        try:
            # The fetcher enforces the same budget on HTTP providers; this guard (with a
            # little grace) covers the model call of native search and any other provider.
            with anyio.fail_after(budget / 1000 + _GRACE_S):
                answer = await provider.search(request, env)
        except TimeoutError:
            report.reason, report.timed_out = f"timed out after {budget} ms", True
        except ProviderSkipped as skip:
            report.status, report.reason, report.requests = skip.kind, skip.reason, 0
        except ProviderFailed as failure:
            report.reason, report.timed_out = failure.reason, failure.timed_out
        except FetchError as failure:
            report.timed_out = failure.fetch_code == "timeout"
            report.reason = f"timed out after {budget} ms" if report.timed_out else failure.message
        report.elapsed_ms = (time.perf_counter() - started) * 1000
        if report.timed_out:
            report.warnings = (
                f"{provider.name} timed out ({report.reason}; the budget is the live setting "
                f"{env.config.timeout_setting(provider.name)})",
            )
        if answer is None:
            return report
        kept, removed = _filtered(answer.hits, request)
        report.hits, report.removed, report.returned = kept, removed, len(answer.hits)
        report.requests, report.notes = answer.requests, answer.notes
        report.time_filter, report.time_enforced = answer.time_filter, answer.time_enforced
        report.domains_at_source = answer.domains_at_source
        report.warnings = report.warnings + answer.warnings
        if kept:
            report.status = "answered"
        else:
            report.status = "empty"
            if answer.hits:
                names = " and ".join(request.domains.describe(name) for name in removed)
                report.reason = f"{names} removed all {len(answer.hits)} of its results"
            else:
                report.reason = "it returned no results"
        return report
