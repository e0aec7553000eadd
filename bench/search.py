"""What the search broker costs per query, and what fusing 4 x 50 results costs.

Four in-process fake providers answer instantly behind the provider interface, so the
figures are the broker's own work: readiness checks, the concurrent walk, time budgets,
domain filtering, fusion and the reports. Printed from one run:

- ms per query through ``SearchBroker.search`` (auto over the four fakes, 10 results each),
  the same four fakes called directly and concurrently, and the broker's overhead and ratio;
- the same query with domain filters on, and the text rendering of its outcome;
- µs per fusion of 4 lists x 50 results (half the pages shared, spelled differently by
  each provider), and how much of it is normalising the URLs.

    .venv/bin/python bench/search.py [queries]
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Awaitable, Callable

import anyio

from corral.settings import Settings
from corral.web.fetch import Fetcher
from corral.web.search import (
    DomainFilter,
    Hit,
    ProviderAnswer,
    SearchBroker,
    SearchConfig,
    SearchEnv,
    SearchRequest,
)
from corral.web.search.fusion import fuse
from corral.web.search.render import render_search
from corral.web.search.urls import url_key
from outcome import Figure, finish

NAMES = ("alpha", "beta", "gamma", "delta")


def make_hits(provider: str, count: int, *, shared_every: int = 2) -> tuple[Hit, ...]:
    """``count`` hits; every ``shared_every``-th page is one all providers return."""
    return tuple(
        Hit(
            title=f"Result {i} from {provider}",
            url=(
                f"https://shared{i}.example/page?utm_source={provider}"
                if i % shared_every == 0
                else f"https://{provider}{i}.example/article/{i}"
            ),
            snippet=f"Snippet {i} of {provider} about corrals, fences and gates.",
            provider=provider,
            position=i,
        )
        for i in range(1, count + 1)
    )


class InstantProvider:
    """A provider that answers at once with a precomputed answer."""

    paid = False
    accepts_domains = False

    def __init__(self, name: str, count: int) -> None:
        self.name = name
        self.answer = ProviderAnswer(hits=make_hits(name, count))

    async def ready(self, env: SearchEnv) -> None:
        return None

    async def search(self, request: SearchRequest, env: SearchEnv) -> ProviderAnswer:
        return self.answer


async def per_query(label: str, count: int, once: Callable[[], Awaitable[object]]) -> float:
    for _ in range(20):
        await once()  # warm up
    started = time.perf_counter()
    for _ in range(count):
        await once()
    per = (time.perf_counter() - started) * 1000 / count
    print(f"{label:<48} {per:8.3f} ms/query")
    return per


async def main(count: int) -> list[Figure]:
    providers = {name: InstantProvider(name, 10) for name in NAMES}
    broker = SearchBroker(providers, keyless=InstantProvider("keyless", 10))
    with tempfile.TemporaryDirectory() as data:
        env = SearchEnv(
            fetcher=Fetcher(),
            settings=Settings(data_dir=data),
            config=SearchConfig(auto_order=NAMES, auto_providers=len(NAMES)),
        )
    request = SearchRequest(query="corral gates", max_results=10)
    filtered = SearchRequest(
        query="corral gates",
        max_results=10,
        domains=DomainFilter.parse(
            ["shared2.example", "alpha3.example", "beta1.example"], ["delta5.example"]
        ),
    )

    async def direct() -> object:
        answers: list[ProviderAnswer] = []

        async def one(provider: InstantProvider) -> None:
            answers.append(await provider.search(request, env))

        async with anyio.create_task_group() as group:
            for provider in providers.values():
                group.start_soon(one, provider)
        return answers

    outcome = await broker.search(request, "auto", env)
    assert len(outcome.answered) == 4 and len(outcome.results) == 10

    base = await per_query("4 fakes called directly, concurrently", count, direct)
    ours = await per_query(
        "broker.search, auto over 4 fakes", count, lambda: broker.search(request, "auto", env)
    )
    await per_query(
        "broker.search with domain filters", count, lambda: broker.search(filtered, "auto", env)
    )

    async def rendered() -> object:
        return render_search(outcome)

    await per_query("render_search of that outcome", count, rendered)
    print(
        f"broker overhead per query: {ours - base:.3f} ms; ratio broker / direct: {ours / base:.1f}"
    )

    lists = [make_hits(name, 50) for name in NAMES]
    rounds = max(count // 4, 50)
    fuse(lists)
    started = time.perf_counter()
    for _ in range(rounds):
        fused = fuse(lists)
    fusion = (time.perf_counter() - started) * 1_000_000 / rounds
    urls = [hit.url for hits in lists for hit in hits]
    started = time.perf_counter()
    for _ in range(rounds):
        for url in urls:
            url_key(url)
    keys = (time.perf_counter() - started) * 1_000_000 / rounds
    label = f"fuse 4 x 50 results ({len(fused)} distinct pages)"
    print(f"{label:<48} {fusion:8.1f} us/fusion")
    print(f"{'of which: normalising the 200 URLs':<48} {keys:8.1f} us")
    print(f"fusion per input result: {fusion / len(urls):.2f} us")
    print(f"ratio fusion / URL normalisation alone: {fusion / keys:.2f}")
    return [
        Figure(name="4 fakes called directly, concurrently", value=base, unit="ms"),
        Figure(name="broker.search, auto over 4 fakes", value=ours, unit="ms", baseline=base),
        Figure(name="normalising 200 URLs", value=keys, unit="µs"),
        Figure(name="fuse 4 x 50 results", value=fusion, unit="µs", baseline=keys),
    ]


if __name__ == "__main__":
    finish("search", anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 2000))
