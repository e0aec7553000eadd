"""web_search's provider broker: strategies, fallback, filters, fusion and research mode.

::

    broker = default_broker()
    env = SearchEnv(fetcher=fetcher, settings=settings, config=SearchConfig.from_live(live))
    outcome = await broker.search(SearchRequest(query="corral fencing"), "auto", env)

Modules, one concept each: ``request`` (what is asked), ``domains`` (host filters),
``dates`` (reading provider dates), ``urls`` (de-duplication keys), ``hits`` (results),
``provider`` (the interface and how a provider drops out), ``env`` (what providers may use),
``config`` (administrator settings), ``outcome`` (reports), ``fusion`` (agreement and
position), ``broker`` (strategies and fallback), ``model_access`` (the conversation's
model, metered), ``variants``, ``ranking``, ``pages`` and ``research`` (research mode),
``render`` (the text and the card), and ``providers/`` (one module per provider).
"""

from __future__ import annotations

from .broker import SearchBroker
from .config import KNOWN_PROVIDERS, SearchConfig
from .domains import DomainFilter
from .env import SearchEnv
from .hits import Hit, RankedHit, Source
from .outcome import ProviderReport, SearchOutcome
from .provider import ProviderAnswer, ProviderFailed, ProviderSkipped, SearchProvider
from .providers import DuckDuckGo, default_providers
from .request import SearchRequest, Strategy, TimeRange
from .research import ResearchOutcome, research

__all__ = [
    "KNOWN_PROVIDERS",
    "DomainFilter",
    "Hit",
    "ProviderAnswer",
    "ProviderFailed",
    "ProviderReport",
    "ProviderSkipped",
    "RankedHit",
    "ResearchOutcome",
    "SearchBroker",
    "SearchConfig",
    "SearchEnv",
    "SearchOutcome",
    "SearchProvider",
    "SearchRequest",
    "Source",
    "Strategy",
    "TimeRange",
    "default_broker",
    "research",
]


def default_broker() -> SearchBroker:
    """The broker over the real providers, with DuckDuckGo as the keyless engine."""
    return SearchBroker(default_providers(), keyless=DuckDuckGo())
