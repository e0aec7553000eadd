"""Query variants for research mode: deterministic rewrites, plus some the model writes.

Deterministic variants come from the query alone (and the current year), so the same call
fans out the same way every time: the keywords without filler words, the keywords with
the current year (fresher pages), the keywords as an exact phrase, and the keywords with
"guide". Model-written variants come from the conversation's own model, metered as
``web_search.variants``; when no model is available that step is skipped and said so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import anyio

from .env import SearchEnv
from .model_access import model_access

__all__ = ["Written", "deterministic_variants", "distinct", "model_variants"]

_FILLER = frozenset(
    "a an the is are was were be been of for in on at to how what why when where which who "
    "whom whose does do did can could should would will i me my you your we our it its this "
    "that these those and or about with from by as into please tell find show search".split()
)
_YEAR = re.compile(r"\b(19|20)\d{2}\b")
_PUNCT = "?!.,;:"


def _keywords(query: str) -> str:
    words = [w.strip(_PUNCT) for w in query.split()]
    kept = [w for w in words if w and w.lower() not in _FILLER]
    return " ".join(kept) if kept else " ".join(w for w in words if w)


def distinct(queries: list[str], *, besides: str) -> list[str]:
    """``queries`` without blanks, repeats and the original query (case-insensitive)."""
    seen = {" ".join(besides.lower().split())}
    out: list[str] = []
    for query in queries:
        key = " ".join(query.lower().split())
        if key and key not in seen:
            seen.add(key)
            out.append(" ".join(query.split()))
    return out


def deterministic_variants(query: str, *, year: int) -> list[str]:
    """Rewrites of ``query`` that depend only on it and on ``year``."""
    core = _keywords(query)
    variants = [core]
    if not _YEAR.search(query):
        variants.append(f"{core} {year}")
    if 2 <= len(core.split()) <= 6 and '"' not in query:
        variants.append(f'"{core}"')
    variants.append(f"{core} guide")
    return distinct(variants, besides=query)


def _instructions(count: int) -> str:
    return (
        f"Rewrite the user's web search query into {count} different search engine queries "
        "that would find other good sources on the same question: other wording, the key "
        "terms experts use, a narrower angle. One query per line, no numbering, no quotes "
        "around the line, nothing else."
    )


@dataclass(frozen=True, slots=True)
class Written:
    """What the model step produced: variants, or why it was skipped."""

    variants: list[str]
    note: str | None = None
    """Why the step did not run (no model in this context): information, not a problem."""
    warning: str | None = None
    """Why the step failed (the model errored or timed out)."""


async def model_variants(query: str, count: int, env: SearchEnv) -> Written:
    """Up to ``count`` variants from the conversation's model."""
    if count <= 0:
        return Written([])
    access = model_access(env)
    if isinstance(access, str):
        return Written([], note=f"model-written query variants skipped: {access}")
    from pydantic_ai.direct import model_request
    from pydantic_ai.exceptions import AgentRunError, ModelAPIError, UserError
    from pydantic_ai.messages import ModelRequest, TextPart

    try:
        with anyio.fail_after(env.config.native_timeout_ms / 1000):
            response = await model_request(
                access.model,
                [ModelRequest.user_text_prompt(query, instructions=_instructions(count))],
                model_settings={"max_tokens": 400},
            )
    except TimeoutError:
        return Written(
            [],
            warning=f"model-written query variants skipped: {access.spec} did not answer "
            f"within {env.config.native_timeout_ms} ms",
        )
    except (ModelAPIError, AgentRunError, UserError) as exc:
        return Written(
            [], warning=f"model-written query variants skipped: {access.spec} failed: {exc}"
        )
    await access.record(env, response, source="web_search.variants")
    said = "\n".join(p.content for p in response.parts if isinstance(p, TextPart))
    lines = [
        line.strip().lstrip("-*•0123456789.) ").strip().strip('"') for line in said.splitlines()
    ]
    usable = [line for line in lines if 0 < len(line) <= 200]
    return Written(distinct(usable, besides=query)[:count])
