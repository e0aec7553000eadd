"""The root builds each command on first lookup (issue 39, item 3): the tree and every help
text are the ones typer builds eagerly from the same modules, and running a command
imports its own module only."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest
import typer
from typer.core import TyperGroup
from typer.main import get_command
from typer.testing import CliRunner

from corral.cli import main
from corral.cli._global_options import CorralGroup
from corral.cli._lazy import LazyCommands

runner = CliRunner()


def eager_app() -> typer.Typer:
    """The root as it was registered before: every module imported, every command added."""
    app = typer.Typer(
        cls=CorralGroup,
        help="Corral: an agent platform whose tools are the product.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
    )
    app.callback()(main.main)
    for name, target in main.COMMANDS.items():
        module, attribute = target.split(":")
        value = getattr(importlib.import_module(f"corral.cli.{module}"), attribute)
        if isinstance(value, typer.Typer):
            app.add_typer(value, name=name)
        else:
            app.command(name)(value)
    return app


def command_paths(group: TyperGroup, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [path]
    for name in group.list_commands(typer.Context(group)):
        command = group.get_command(typer.Context(group), name)
        if isinstance(command, TyperGroup):
            paths.extend(command_paths(command, (*path, name)))
        else:
            paths.append((*path, name))
    return paths


def test_every_help_text_is_the_eagerly_built_ones() -> None:
    eager = eager_app()
    eager_root = get_command(eager)
    assert isinstance(eager_root, TyperGroup)
    paths = command_paths(eager_root)
    lazy_root = get_command(main.app)
    assert isinstance(lazy_root, TyperGroup)
    assert command_paths(lazy_root) == paths
    assert len(paths) > 100
    for path in paths:
        want = runner.invoke(eager, [*path, "--help"], env={"COLUMNS": "100"})
        got = runner.invoke(main.app, [*path, "--help"], env={"COLUMNS": "100"})
        assert (got.exit_code, got.output) == (want.exit_code, want.output), path


@pytest.mark.parametrize("argv", [["toolz"], ["tools", "lst"], []])
def test_mistakes_are_answered_as_before(argv: list[str]) -> None:
    want = runner.invoke(eager_app(), argv, env={"COLUMNS": "100"})
    got = runner.invoke(main.app, argv, env={"COLUMNS": "100"})
    assert (got.exit_code, got.output) == (want.exit_code, want.output)
    assert got.exit_code == 2


def test_lazy_commands_build_once_and_keep_their_order() -> None:
    built: list[str] = []
    made: list[str] = []

    def build(name: str, target: str) -> typer.core.TyperCommand:
        made.append(target)
        return typer.core.TyperCommand(name=name)

    commands = LazyCommands(
        {"b": "B", "a": "A"}, build=build, on_build=lambda c: built.append(c.name or "")
    )
    assert list(commands) == ["b", "a"] and len(commands) == 2 and made == []
    assert commands["a"] is commands["a"]
    assert made == ["A"] and built == ["a"]
    commands["c"] = typer.core.TyperCommand(name="c")
    del commands["b"]
    assert list(commands) == ["a", "c"] and "b" not in commands and made == ["A"]
    with pytest.raises(KeyError):
        commands["b"]


PROBE = """
import json, runpy, sys
sys.argv = ["corral", *sys.argv[1:]]
try:
    runpy.run_module("corral", run_name="__main__")
except SystemExit as stop:
    assert stop.code in (0, None), stop.code
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def test_a_command_imports_its_own_module_only() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "users", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stderr.splitlines()[-1]))
    modules = {f"corral.cli.{target.split(':')[0]}" for target in main.COMMANDS.values()}
    assert loaded & modules == {"corral.cli.users"}
