"""Real models through pydantic-ai-slim's model layer, chosen by ``provider:model``.

- ``openai:gpt-5``, ``anthropic:claude-sonnet-5-5``, ``google:gemini-2.5-pro`` (``gemini:``
  is the same), ``groq:…``, ``mistral:…``: pydantic-ai's own providers, which read their
  keys from the environment (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``GOOGLE_API_KEY``…).
- ``ollama:llama3.2``, ``vllm:qwen3``: OpenAI-compatible servers found by
  ``OLLAMA_BASE_URL`` / ``VLLM_BASE_URL``.
- ``<endpoint>:<model>`` for any name in the ``model_endpoints`` setting: an OpenAI-compatible
  server at that endpoint's ``base_url``, its key read from the variable ``api_key_env`` names.

A key stored as a credential named after the provider (``openai``, ``anthropic``, ``google``,
an endpoint's name — see :func:`credential_name`) wins over the environment: the runtime looks
it up for the run's user (their own, else the project's) and passes it as ``key``.

Keys are never written in code or settings files. :data:`REAL_MODEL_GUARD` is the seam
tests use to make sure no test ever reaches a real model.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from corral.errors import UsageError
from corral.settings import Settings

if TYPE_CHECKING:
    from pydantic_ai.models import Model

__all__ = [
    "REAL_MODEL_GUARD",
    "MediaSupport",
    "build_real_model",
    "credential_name",
    "media_support",
]

REAL_MODEL_GUARD: Callable[[str], None] | None = None
"""Called with the model string before a real model is built; tests make it fail."""

ALIASES = {"gemini": "google"}


@dataclass(frozen=True, slots=True)
class MediaSupport:
    """Which media a model reads as real content; the rest reaches it as a marker."""

    images: bool = False
    audio: bool = False


def media_support(model: Model) -> MediaSupport:
    try:
        profile: Any = model.profile
    except NotImplementedError:
        return MediaSupport()
    return MediaSupport(
        images=bool(profile.get("supports_image_input", False)),
        audio=bool(profile.get("supports_audio_file_input", False)),
    )


def credential_name(spec: str) -> str:
    """The credential holding the key of ``spec``'s provider (``gemini:`` reads ``google``)."""
    provider = spec.partition(":")[0].lower()
    return ALIASES.get(provider, provider)


def _with_key(provider: str, name: str, key: str) -> Model | None:
    """A model of one of the keyed providers built with ``key``; None for other providers."""
    if provider == "openai":
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        return OpenAIChatModel(name, provider=OpenAIProvider(api_key=key))
    if provider == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        return AnthropicModel(name, provider=AnthropicProvider(api_key=key))
    if provider == "google":
        from pydantic_ai.models.google import GoogleModel
        from pydantic_ai.providers.google import GoogleProvider

        return GoogleModel(name, provider=GoogleProvider(api_key=key))
    return None


def build_real_model(
    spec: str, settings: Settings, *, key: str | None = None
) -> tuple[Model, MediaSupport]:
    """The model ``spec`` names; ``key`` (a stored credential) wins over the environment."""
    provider, _, name = spec.partition(":")
    if not provider or not name:
        raise UsageError(
            f"model {spec!r} must be written provider:model, e.g. anthropic:claude-sonnet-5-5"
        )
    if REAL_MODEL_GUARD is not None:
        REAL_MODEL_GUARD(spec)
    endpoint = settings.model_endpoints.get(provider)
    if endpoint is not None:
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        if key is None and endpoint.api_key_env:
            key = os.environ.get(endpoint.api_key_env)
        served = OpenAIChatModel(
            name, provider=OpenAIProvider(base_url=endpoint.base_url, api_key=key or "not-set")
        )
        accepts = set(endpoint.accepts)
        return served, MediaSupport(images="image" in accepts, audio="audio" in accepts)
    keyed = _with_key(ALIASES.get(provider, provider), name, key) if key else None
    if keyed is not None:
        return keyed, media_support(keyed)
    from pydantic_ai.exceptions import UserError
    from pydantic_ai.models import infer_model

    try:
        model = infer_model(f"{ALIASES.get(provider, provider)}:{name}")
    except (UserError, ValueError, ImportError) as exc:
        raise UsageError(
            f"model {spec!r} cannot be used: {exc}. Check the provider name and its key "
            "variable, or add an OpenAI-compatible server under model_endpoints"
        ) from None
    return model, media_support(model)
