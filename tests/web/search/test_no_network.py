"""Nothing configured and no network: the default strategy still answers, and says why.

"No network" is the resolver seam failing every name at once, as an offline resolver does;
the address rules stay the production default, so no test allowance is involved.
"""

from __future__ import annotations

import time
from pathlib import Path

import corral
from corral.web.access import WebAccess
from corral.web.fetch import StaticResolver


async def test_default_strategy_with_nothing_configured_and_no_network(data_dir: Path) -> None:
    offline = StaticResolver({})
    async with corral.open(data_dir) as platform:
        platform.provide(web=WebAccess(resolver=offline))
        started = time.perf_counter()
        result = await platform.call_tool("web_search", {"query": "corral fencing"})
        elapsed = time.perf_counter() - started
    assert result.is_error and result.error_code == "search_unavailable"
    lines = result.text.splitlines()
    assert lines[0] == 'web_search: no results for "corral fencing" (strategy auto)'
    assert (
        lines[1] == "No results: no provider could answer (unconfigured: tavily, brave, searxng)."
    )
    assert lines[2] == (
        "The keyless engine (duckduckgo) failed: the host 'html.duckduckgo.com' could not be "
        "resolved (no such name); check the spelling or try the site's main domain."
    )
    for name in ("tavily", "brave", "searxng"):
        assert any(line.startswith(f"- {name}: unconfigured — no ") for line in lines)
    assert offline.calls == [("html.duckduckgo.com", 443)]
    assert result.data is not None
    assert [(p["provider"], p["status"]) for p in result.data["providers"]] == [
        ("tavily", "unconfigured"),
        ("brave", "unconfigured"),
        ("searxng", "unconfigured"),
        ("duckduckgo", "failing"),
    ]
    assert elapsed < 5  # a resolver failure, not a network timeout (those take 10 s here)
