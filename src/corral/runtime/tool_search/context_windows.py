"""A model's context window, in tokens, from the ``genai-prices`` data (no network).

A model the data does not know (a scripted model, a local server's) gets
:data:`FALLBACK_CONTEXT_TOKENS`, a common size small enough not to defer too late.
"""

from __future__ import annotations

import functools
import logging

from corral.runtime.models.providers import credential_name

__all__ = ["FALLBACK_CONTEXT_TOKENS", "context_window"]

log = logging.getLogger("corral.runtime")

FALLBACK_CONTEXT_TOKENS = 128_000


@functools.cache
def context_window(spec: str) -> int:
    """The context window of ``provider:model``, or the fallback for a model not known."""
    provider, _, name = spec.partition(":")
    if not name or provider == "script":
        return FALLBACK_CONTEXT_TOKENS
    from genai_prices import data_snapshot  # its tables load in a tenth of a second

    snapshot = data_snapshot.get_snapshot()
    for provider_id in (credential_name(spec), None):
        try:
            _, model = snapshot.find_provider_model(name, None, provider_id, None)
        except LookupError:
            continue
        except Exception:  # the price data is an aid here: a fault in it must not stop a run
            log.exception("looking up the context window of %s failed", spec)
            break
        if model.context_window:
            return int(model.context_window)
    return FALLBACK_CONTEXT_TOKENS
