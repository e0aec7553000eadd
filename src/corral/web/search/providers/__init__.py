"""The real search providers, one module each, all behind :class:`~..provider.SearchProvider`.

``tavily``, ``brave`` and ``searxng`` call their JSON APIs through the fetch pipeline;
``duckduckgo`` is the keyless engine (its HTML endpoint through the pipeline); ``native``
is the conversation model's own search through pydantic-ai.
"""

from __future__ import annotations

from ..provider import SearchProvider
from .brave import Brave
from .duckduckgo import DuckDuckGo
from .native import NativeSearch
from .searxng import SearXNG
from .tavily import Tavily

__all__ = ["Brave", "DuckDuckGo", "NativeSearch", "SearXNG", "Tavily", "default_providers"]


def default_providers() -> dict[str, SearchProvider]:
    """Every provider a strategy can name, by name (the keyless engine is separate)."""
    providers: list[SearchProvider] = [NativeSearch(), Tavily(), Brave(), SearXNG()]
    return {provider.name: provider for provider in providers}
