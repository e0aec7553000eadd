"""`corral skills`: list the available skills with load errors, show one, import a bundle."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from corral.cli._run import console, print_json, run_with_platform

if TYPE_CHECKING:
    from corral.platform import Platform
    from corral.runtime.skills import SkillBundle, Skills

__all__ = ["app"]

app = typer.Typer(help="Skill bundles (SKILL.md): list, show, import.", no_args_is_help=True)


def _skills(platform: Platform) -> Skills:
    from corral.runtime.skills import Skills

    return platform.services.require(Skills)


def _summary(bundle: SkillBundle) -> dict[str, Any]:
    return {
        "name": bundle.name,
        "description": bundle.description,
        "origin": bundle.origin,
        "package": bundle.package,
        "folder": str(bundle.folder),
        "credentials": [{"name": c.name, "env": c.env} for c in bundle.credentials],
        "allowed_tools": list(bundle.allowed_tools),
        "other_fields": bundle.other_fields,
        "warnings": list(bundle.warnings),
    }


@app.command("list")
def list_skills(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Every available skill (a disabled package's are gone) and every bundle left out."""

    async def work(platform: Platform) -> dict[str, Any]:
        found = await _skills(platform).available(viewer=None)
        return {
            "skills": [_summary(b) for _, b in sorted(found.skills.items())],
            "errors": [
                {"file": e.file, "field": e.field, "message": e.message} for e in found.errors
            ],
        }

    listed = run_with_platform(ctx, work)
    if as_json:
        print_json(listed)
        return
    table = Table("skill", "from", "credentials", "description")
    for skill in listed["skills"]:
        origin = f"package {skill['package']}" if skill["package"] else skill["origin"]
        names = ", ".join(c["env"] for c in skill["credentials"]) or "-"
        table.add_row(skill["name"], origin, names, skill["description"][:70])
    console.print(table)
    for skill in listed["skills"]:
        for warning in skill["warnings"]:
            console.print(f"[yellow]warning[/yellow] {skill['folder']}/SKILL.md: {warning}")
    for error in listed["errors"]:
        where = f" (field {error['field']!r})" if error["field"] else ""
        console.print(f"[red]left out[/red] {error['file']}{where}: {error['message']}")


@app.command("show")
def show(
    ctx: typer.Context, name: Annotated[str, typer.Argument(help="The skill's name.")]
) -> None:
    """One skill: where it lives, what it declares, and its body."""

    async def work(platform: Platform) -> dict[str, Any]:
        from corral.errors import NotFound

        found = await _skills(platform).available(viewer=None)
        bundle = found.skills.get(name)
        if bundle is None:
            known = ", ".join(sorted(found.skills)) or "none"
            raise NotFound(f"no skill {name!r}; available: {known} (`corral skills list`)")
        return {**_summary(bundle), "body": bundle.body}

    print_json(run_with_platform(ctx, work))


@app.command("import")
def import_skill(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="The bundle's folder (holding SKILL.md).")],
    replace: Annotated[
        bool, typer.Option("--replace", help="Overwrite a skill of that name in the drive.")
    ] = False,
) -> None:
    """Validate a bundle and copy it into the drive as data://skills/<name>/."""

    async def work(platform: Platform) -> dict[str, Any]:
        from corral.runtime.skills import import_bundle

        skills = _skills(platform)
        bundle = import_bundle(path.resolve(), skills.catalog.drive_folder, replace=replace)
        # The operator chose this bundle: it is trusted for everyone, as it is now.
        await skills.trust(bundle.name, user_id="", project=True)
        return _summary(bundle)

    imported = run_with_platform(ctx, work)
    console.print(f"imported skill {imported['name']!r} into data://skills/{imported['name']}/")
    for warning in imported["warnings"]:
        console.print(f"[yellow]warning[/yellow] {warning}")


@app.command("trust")
def trust(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The drive skill's name.")],
    user: Annotated[
        str | None,
        typer.Option("--user", help="Trust it for this user id only, not for everyone."),
    ] = None,
) -> None:
    """Let a skill in data://skills/ appear to everyone (or one user) as its files are now.

    A later change to any of its files hides it again until it is trusted again."""

    async def work(platform: Platform) -> dict[str, Any]:
        trusted = await _skills(platform).trust(name, user_id=user or "", project=user is None)
        return {"skill": trusted.name, "sha256": trusted.digest, "scope": trusted.scope}

    done = run_with_platform(ctx, work)
    who = "everyone" if done["scope"] == "project" else f"user {user!r}"
    console.print(f"trusted skill {done['skill']!r} for {who} (sha256 {done['sha256'][:12]}…)")
