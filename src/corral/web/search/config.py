"""The administrator's search settings, read from live and start-up settings per call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["KNOWN_PROVIDERS", "SearchConfig"]

KNOWN_PROVIDERS = ("native", "tavily", "brave", "searxng")
"""Providers a strategy or the auto order may name; the keyless engine is the fallback."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchConfig:
    """Everything the broker and research mode need to know from the administrator."""

    auto_order: tuple[str, ...] = ("tavily", "brave", "searxng")
    """Providers ``auto`` walks, in order (live ``web_search_auto_order``)."""
    auto_providers: int = 2
    """How many configured providers ``auto`` asks and fuses (``web_search_auto_providers``)."""
    timeout_ms: int = 10_000
    """Budget of one HTTP provider request (``web_search_timeout_ms``)."""
    native_timeout_ms: int = 60_000
    """Budget of one native search (``web_search_native_timeout_ms``)."""
    native_fee_usd: float = 0.01
    """Vendor fee per native search (``web_search_native_fee_usd``)."""
    research_variants: int = 3
    """Follow-up variants in research mode (``web_search_research_variants``)."""
    research_model_variants: int = 2
    """Of those, how many the model may write (``web_search_research_model_variants``)."""
    research_paid_cap: int = 1
    """Follow-ups allowed on a paid provider (``web_search_research_paid_cap``)."""
    fetch_top_chars: int = 8_000
    """Markdown characters per page for ``fetch_top`` (``web_search_fetch_top_chars``)."""
    unknown_in_order: tuple[str, ...] = ()
    """Names in ``web_search_auto_order`` that are not providers (reported, then ignored)."""

    @classmethod
    def from_live(cls, live: Mapping[str, Any]) -> SearchConfig:
        """Read the ``web_search_*`` live settings (missing keys keep their defaults)."""
        defaults = cls()
        raw_order = str(live.get("web_search_auto_order", ",".join(defaults.auto_order)))
        names = [n.strip().lower() for n in raw_order.split(",") if n.strip()]
        order = tuple(dict.fromkeys(n for n in names if n in KNOWN_PROVIDERS))
        unknown = tuple(n for n in names if n not in KNOWN_PROVIDERS)

        def number(key: str, default: float) -> Any:
            return live.get(f"web_search_{key}", default)

        return cls(
            auto_order=order,
            auto_providers=int(number("auto_providers", defaults.auto_providers)),
            timeout_ms=int(number("timeout_ms", defaults.timeout_ms)),
            native_timeout_ms=int(number("native_timeout_ms", defaults.native_timeout_ms)),
            native_fee_usd=float(number("native_fee_usd", defaults.native_fee_usd)),
            research_variants=int(number("research_variants", defaults.research_variants)),
            research_model_variants=int(
                number("research_model_variants", defaults.research_model_variants)
            ),
            research_paid_cap=int(number("research_paid_cap", defaults.research_paid_cap)),
            fetch_top_chars=int(number("fetch_top_chars", defaults.fetch_top_chars)),
            unknown_in_order=unknown,
        )

    def timeout_for(self, provider: str) -> int:
        """The time budget in ms for one request to ``provider``."""
        return self.native_timeout_ms if provider == "native" else self.timeout_ms

    @staticmethod
    def timeout_setting(provider: str) -> str:
        """The live setting holding :meth:`timeout_for`'s value."""
        return "web_search_native_timeout_ms" if provider == "native" else "web_search_timeout_ms"
