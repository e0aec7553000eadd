"""`corral questions`: the questions agents asked you, and answering them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from corral.cli._run import console, print_json, run_with_platform
from corral.cli._turns import TurnPrinter, follow, runtime

if TYPE_CHECKING:
    from corral.platform import Platform
    from corral.runtime.questions import AnswerInput, Questions

__all__ = ["app"]

app = typer.Typer(help="Questions agents asked you: list and answer.", no_args_is_help=True)


def _questions(platform: Platform) -> Questions:
    from corral.runtime.questions import Questions

    return platform.services.require(Questions)


@app.command("list")
def list_questions(
    ctx: typer.Context,
    every: Annotated[bool, typer.Option("--all", help="Answered and closed ones too.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Your open questions (with --all, every question put to you)."""

    async def work(platform: Platform) -> list[dict[str, Any]]:
        found = await _questions(platform).list_questions(status=None if every else "open")
        return [q.to_json() for q in found]

    records = run_with_platform(ctx, work)
    if as_json:
        print_json(records)
        return
    if not records:
        console.print("no open questions")
        return
    table = Table("id", "status", "conversation", "questions")
    for record in records:
        asked = []
        for number, q in enumerate(record["questions"], start=1):
            options = f" [{' / '.join(q['options'])}]" if q["options"] else ""
            several = " (several)" if q["multi_select"] else ""
            asked.append(f"{number}. {q['question']}{options}{several}")
        table.add_row(record["id"], record["status"], record["conversation_id"], "\n".join(asked))
    console.print(table)


@app.command("answer")
def answer(
    ctx: typer.Context,
    question_id: Annotated[str, typer.Argument(help="The question's id (q_…).")],
    answers: Annotated[
        list[str],
        typer.Argument(
            help="One answer per question, in order: your words or an option's number; for "
            "a multi-select question, choices separated by commas (e.g. 1,3)."
        ),
    ],
    note: Annotated[str | None, typer.Option(help="A note for the agent.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Answer a question; the waiting run continues with your answers."""

    async def work(platform: Platform) -> dict[str, Any]:
        service = _questions(platform)
        record = await service.get(question_id)
        given: list[AnswerInput] = []
        for question, text in zip(record.questions, answers, strict=False):
            given.append([p.strip() for p in text.split(",")] if question.multi_select else text)
        given += answers[len(record.questions) :]  # a count mismatch is reported by answer()

        async def answer_it() -> dict[str, Any]:
            return (await service.answer(question_id, given, surface="cli", note=note)).to_json()

        printer = None if as_json else TurnPrinter(console)
        answered = await follow(platform, record.conversation_id, printer, answer_it)
        run = await runtime(platform).runs.get(record.run_id)
        return {**answered, "run": run.to_json()}

    outcome = run_with_platform(ctx, work)
    if as_json:
        print_json(outcome)
        return
    run = outcome["run"]
    reason = f" ({run['reason']})" if run["reason"] else ""
    console.print(f"run {run['id']}: {run['status']}{reason}", highlight=False)
