"""Global options work before and after the subcommand, on a real data folder."""

from __future__ import annotations

import json
from pathlib import Path

from typer.core import TyperGroup
from typer.main import get_command
from typer.testing import CliRunner, Result

from corral.cli.main import app

runner = CliRunner()


def corral(*args: str | Path, env: dict[str, str] | None = None) -> Result:
    return runner.invoke(app, [str(a) for a in args], env=env)


def user_names(*args: str | Path, env: dict[str, str] | None = None) -> set[str]:
    listed = corral("users", "list", "--json", *args, env=env)
    assert listed.exit_code == 0, listed.output
    return {u["name"] for u in json.loads(listed.stdout)}


def test_data_dir_before_or_after_the_subcommand_opens_the_same_folder(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    assert corral("--data-dir", one, "users", "add", "ana").exit_code == 0
    assert "ana" in user_names("--data-dir", one)  # given after `users list`
    assert corral("users", "add", "bo", "--data-dir", two).exit_code == 0
    listed_before = corral("--data-dir", two, "users", "list", "--json")
    assert {u["name"] for u in json.loads(listed_before.stdout)} == {"owner", "bo"}
    assert user_names("--data-dir", one) == {"owner", "ana"}  # bo went into the other folder


def test_after_the_subcommand_wins_over_before_and_over_the_environment(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    assert corral("users", "add", "ana", env={"CORRAL_DATA_DIR": str(one)}).exit_code == 0
    assert corral("users", "add", "bo", "--data-dir", two).exit_code == 0
    env_one = {"CORRAL_DATA_DIR": str(one)}
    assert user_names("--data-dir", two, env=env_one) == {"owner", "bo"}
    assert user_names(env=env_one) == {"owner", "ana"}  # nothing left over from the last call
    both = corral("--data-dir", one, "users", "list", "--json", "--data-dir", two)
    assert {u["name"] for u in json.loads(both.stdout)} == {"owner", "bo"}
    between = corral("users", "--data-dir", one, "list", "--json")  # after the group's name
    assert {u["name"] for u in json.loads(between.stdout)} == {"owner", "ana"}


def test_data_dir_after_positional_arguments(tmp_path: Path) -> None:
    data = tmp_path / "after"
    decided = corral("approvals", "decide", "ap_1", "approve", "--data-dir", data)
    assert decided.exit_code == 2
    assert "no approval 'ap_1'" in decided.output
    assert (data / "corral.db").is_file()  # it opened the folder named after the arguments


def test_every_command_takes_the_global_options() -> None:
    root = get_command(app)
    assert isinstance(root, TyperGroup)
    seen: list[str] = []

    def walk(group: TyperGroup, path: str) -> None:
        for name, command in group.commands.items():
            options = {opt for param in command.params for opt in getattr(param, "opts", [])}
            assert "--data-dir" in options, f"{path} {name}"
            seen.append(f"{path} {name}")
            if isinstance(command, TyperGroup):
                walk(command, f"{path} {name}")

    walk(root, "corral")
    assert {"corral serve", "corral shells list", "corral approvals decide"} <= set(seen)
    helped = corral("shells", "list", "--help")
    assert helped.exit_code == 0
    assert "Global options" in helped.output and "--data-dir" in helped.output
