"""Global options: what the root callback's options chose, kept on ``ctx.obj``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

__all__ = ["CliState", "cli_state"]


@dataclass(slots=True, kw_only=True)
class CliState:
    """What the global options chose for this invocation; one field per root option."""

    data_dir: Path | None = None
    """The folder holding Corral's state; None for the settings' default (./corral-data)."""


def cli_state(ctx: typer.Context) -> CliState:
    """The invocation's :class:`CliState`: the root's, or a default one outside the root."""
    return ctx.ensure_object(CliState)
