"""The internal signal that ends an analysis with a refusal."""

from __future__ import annotations

from typing import NoReturn

from corral.shell.analysis._types import Rule

__all__ = ["Refused", "refuse"]

_MAX_WORD = 120


class Refused(Exception):
    """Raised anywhere in the walk; :func:`~corral.shell.analysis.analyze` makes it a verdict."""

    def __init__(self, rule: Rule, word: str, detail: str) -> None:
        super().__init__(detail)
        self.rule: Rule = rule
        self.word = word if len(word) <= _MAX_WORD else word[: _MAX_WORD - 1] + "…"
        self.detail = detail


def refuse(rule: Rule, word: str, detail: str) -> NoReturn:
    """Stop the analysis: ``rule`` was broken by ``word``; ``detail`` says what to do instead."""
    raise Refused(rule, word, detail)
