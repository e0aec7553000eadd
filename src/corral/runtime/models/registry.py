"""Resolving a model string to a pydantic-ai model: registered, scripted or real.

Order: names registered in this process (tests and embedding programs inject any
pydantic-ai ``Model`` here, e.g. a ``FunctionModel``), then ``script:PATH``, then real
providers (:mod:`corral.runtime.models.providers`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from corral.runtime.models.providers import (
    MediaSupport,
    build_real_model,
    credential_name,
    media_support,
)
from corral.service_protocols import CredentialLookup
from corral.settings import Settings

if TYPE_CHECKING:
    from pydantic_ai.models import Model

__all__ = ["ModelRegistry", "ResolvedModel"]


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    spec: str
    model: Model
    media: MediaSupport


class ModelRegistry:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._registered: dict[str, ResolvedModel] = {}
        self._scripts: dict[str, tuple[int, ResolvedModel]] = {}
        self._real: dict[tuple[str, str], ResolvedModel] = {}

    def register(self, name: str, model: Model, *, media: MediaSupport | None = None) -> None:
        """Make ``name`` resolve to ``model`` in this process (a seam for fakes)."""
        self._registered[name] = ResolvedModel(name, model, media or media_support(model))

    def resolve(self, spec: str, *, key: str | None = None) -> ResolvedModel:
        """The model ``spec`` names; ``key`` is a stored provider key (else the environment)."""
        registered = self._registered.get(spec)
        if registered is not None:
            return registered
        if spec.startswith("script:"):
            return self._script(spec)
        cache = (spec, hashlib.sha256(key.encode()).hexdigest() if key else "")
        real = self._real.get(cache)
        if real is None:
            model, media = build_real_model(spec, self._settings, key=key)
            real = self._real[cache] = ResolvedModel(spec, model, media)
        return real

    async def resolve_for(
        self, spec: str, *, user_id: str, credentials: CredentialLookup | None
    ) -> ResolvedModel:
        """:meth:`resolve` with the provider key stored for ``user_id`` (their own, else the
        project's), when there is one."""
        key = None
        if credentials is not None and spec not in self._registered and ":" in spec:
            if not spec.startswith("script:"):
                key = await credentials.lookup(credential_name(spec), user_id=user_id)
        return self.resolve(spec, key=key)

    def _script(self, spec: str) -> ResolvedModel:
        from corral.runtime.models.script import load_script, script_model

        path = Path(spec.removeprefix("script:")).expanduser()
        try:
            stamp = path.stat().st_mtime_ns
        except OSError:
            stamp = -1
        cached = self._scripts.get(spec)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        script = load_script(path)
        media = MediaSupport(images="image" in script.accepts, audio="audio" in script.accepts)
        resolved = ResolvedModel(spec, script_model(script, spec), media)
        self._scripts[spec] = (stamp, resolved)
        return resolved
