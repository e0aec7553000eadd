"""Running a platform coroutine from a command, with errors shown the same way everywhere."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console

from corral.errors import CorralError
from corral.platform import Platform, open_platform

__all__ = ["console", "err_console", "fail", "print_json", "run_with_platform", "state"]

T = TypeVar("T")
console = Console()
err_console = Console(stderr=True)


class _State:
    data_dir: Path | None = None


state = _State()


def fail(message: str) -> NoReturn:
    """Report a usage problem and exit with 2."""
    err_console.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(2)


def print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def run_with_platform(work: Callable[[Platform], Awaitable[T]]) -> T:
    """Open the platform, run ``work`` as the local owner, close it; errors exit with 2."""

    async def main() -> T:
        platform = await open_platform(state.data_dir)
        try:
            return await work(platform)
        finally:
            await platform.close()

    try:
        return asyncio.run(main())
    except CorralError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False)
        raise typer.Exit(2) from None
