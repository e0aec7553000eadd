"""Secret arguments: taken out before rows and approvals are written, put back for the call."""

from __future__ import annotations

import json
from pathlib import Path

from corral.tools.contract import LoadError, load_tool_file
from corral.tools.secret_arguments import REDACTED, join_secrets, split_secrets


def test_split_takes_every_match_out_and_join_puts_it_back() -> None:
    arguments = {
        "add": [
            {"kind": "credential", "name": "a", "secret": "s-one"},
            {"kind": "mcp", "name": "b", "url": "https://x"},
            {"kind": "credential", "name": "c", "secret": "s-two"},
        ],
        "list": ["credential"],
    }
    redacted, secrets = split_secrets(arguments, ["/add/*/secret"])
    assert secrets == {"/add/0/secret": "s-one", "/add/2/secret": "s-two"}
    assert [item.get("secret") for item in redacted["add"]] == [REDACTED, None, REDACTED]
    assert "s-one" not in json.dumps(redacted) and "s-two" not in json.dumps(redacted)
    assert arguments["add"][0]["secret"] == "s-one"  # the caller's arguments are untouched
    assert join_secrets(redacted, secrets) == arguments


def test_without_a_match_nothing_is_copied() -> None:
    arguments = {"list": ["mcp"]}
    redacted, secrets = split_secrets(arguments, ["/add/*/secret", "/token"])
    assert redacted is arguments and secrets == {}
    assert join_secrets(arguments, {}) is arguments


def test_a_plain_pointer_and_object_wildcards() -> None:
    arguments = {"token": "t", "headers": {"a": "1", "b": "2"}}
    redacted, secrets = split_secrets(arguments, ["/token", "/headers/*"])
    assert redacted == {"token": REDACTED, "headers": {"a": REDACTED, "b": REDACTED}}
    assert join_secrets(redacted, secrets) == arguments


def test_the_contract_refuses_a_secret_argument_that_is_not_a_property(tmp_path: Path) -> None:
    tool = {
        "name": "leaky",
        "description": "Use a key to reach a service; a tool for the contract tests.",
        "input_schema": {
            "type": "object",
            "properties": {"key": {"type": "string", "description": "The key."}},
        },
        "secret_arguments": ["/password"],
    }
    path = tmp_path / "leaky.json"
    path.write_text(json.dumps(tool))
    loaded = load_tool_file(path)
    assert isinstance(loaded, LoadError)
    assert loaded.pointer == "/secret_arguments/0" and "'password'" in loaded.message
    path.write_text(json.dumps(tool | {"secret_arguments": ["/key"]}))
    spec = load_tool_file(path)
    assert not isinstance(spec, LoadError) and spec.secret_arguments == ("/key",)
