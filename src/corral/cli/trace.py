"""`corral trace RUN`: a run's stored trace as a tree with durations."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from corral.cli._run import console, print_json, run_with_platform

if TYPE_CHECKING:
    from corral.platform import Platform

__all__ = ["trace"]


def trace(
    ctx: typer.Context,
    run_id: Annotated[str, typer.Argument(help="The run's id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Show each span's attributes.")
    ] = False,
) -> None:
    """A run's trace from the local trace store: the span tree with durations, the
    stages' decisions and events such as parked and resumed."""

    async def work(platform: Platform) -> dict[str, Any]:
        from corral.runtime.run_trace import run_spans
        from corral.tracing.tree import tree_json

        run = await platform.runtime.run(run_id)
        return tree_json(await run_spans(platform.kernel.traces, run))

    shown = run_with_platform(ctx, work)
    if as_json:
        print_json(shown)
        return
    console.print(
        f"trace {shown['trace_id']}: {len(shown['spans'])} spans, {_ms(shown['duration_ms'])}",
        highlight=False,
    )
    for line in _lines(shown["spans"], verbose=verbose):
        console.print(line, highlight=False, markup=False, soft_wrap=True)


def _lines(spans: list[dict[str, Any]], *, verbose: bool) -> list[str]:
    lines = []
    for span in spans:
        last: list[bool] = span["last"]
        rails = "".join("   " if done else "│  " for done in last[1:-1])
        branch = "" if span["depth"] == 0 else ("└─ " if last[-1] else "├─ ")
        under = "".join("   " if done else "│  " for done in last[1:]) + "   "
        label = span["name"]
        decision = span["attributes"].get("corral.stage.decision")
        if decision:
            label += f" [{decision}]"
        if span["status"] == "error":
            label += f" ERROR {span['attributes'].get('error.type', '')}".rstrip()
        timing = f"{_ms(span['duration_ms'])} at +{_ms(span['offset_ms'])}"
        lines.append(f"{rails}{branch}{label}  {timing}")
        for event in span["events"]:
            lines.append(f"{under}· {event['name']} {_brief(event['attributes'])}".rstrip())
        if verbose:
            for key, value in sorted(span["attributes"].items()):
                lines.append(f"{under}  {key} = {value}")
    return lines


def _brief(attributes: dict[str, Any]) -> str:
    return " ".join(f"{k.removeprefix('corral.')}={v}" for k, v in sorted(attributes.items()))


def _ms(value: float) -> str:
    return f"{value / 1000:.3f} s" if value >= 1000 else f"{value:.3f} ms"
