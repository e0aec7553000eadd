"""`corral fork CONVERSATION --at STEP [--files-into FOLDER]`: a new conversation with the
history the model had seen before a call, and optionally the files as they were then in a
new folder; nothing is run again and the original is left as it is."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from corral.cli._run import console, print_json, run_with_platform

if TYPE_CHECKING:
    from corral.platform import Platform

__all__ = ["fork"]


def fork(
    ctx: typer.Context,
    conversation: Annotated[str, typer.Argument(help="The conversation to fork.")],
    at: Annotated[
        str,
        typer.Option(
            "--at",
            help="The call to fork before: its call id, or a checkpoint step number "
            "(`corral rewind CONVERSATION` lists them).",
        ),
    ],
    files_into: Annotated[
        str | None,
        typer.Option(
            "--files-into",
            help="A new folder (URI, e.g. data://fork) for the files as they were then.",
        ),
    ] = None,
    user: Annotated[str | None, typer.Option(help="Act as this user (default: the owner).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Start a new conversation from a step of another, files optional."""

    async def work(platform: Platform) -> dict[str, Any]:
        outcome = await platform.fork(conversation, at, user=user, files_into=files_into)
        return outcome.to_json()

    result = run_with_platform(ctx, work)
    if as_json:
        print_json(result)
        return
    console.print(
        f"forked {result['forked_from']} before call {result['at']}: new conversation "
        f"{result['conversation']['id']} with {result['rows']} row(s) of history",
        highlight=False,
        soft_wrap=True,
    )
    for files in result["files"]:
        console.print(
            f"  files of {files['source']} as they were then: {files['folder']} "
            f"({files['paths_restored']} path(s) put back)",
            highlight=False,
            soft_wrap=True,
        )
        for path in files["uncopied"]:
            console.print(f"  not copied (unreadable): {path}", highlight=False)
        for path in files["unrestored"]:
            console.print(f"  not restorable (unreadable then): {path}", highlight=False)
