"""The public surface is what corral.__all__ says, sorted."""

from __future__ import annotations

import json
import subprocess
import sys

import corral

PUBLIC = [
    "ApprovalDenied",
    "ApprovalRecord",
    "AudioBlock",
    "CallContext",
    "Cancellation",
    "ChatTurn",
    "ConfigError",
    "ConversationInfo",
    "CorralError",
    "Decision",
    "FeatureMissing",
    "Handler",
    "ImageBlock",
    "Installed",
    "InvalidArguments",
    "LoadedTool",
    "Narrowing",
    "NotFound",
    "NotVisible",
    "PackageSetup",
    "Platform",
    "PolicyDenied",
    "Refusal",
    "ResourceBlock",
    "RunFailure",
    "RunResult",
    "Script",
    "Services",
    "Settings",
    "TextBlock",
    "TimelineRow",
    "ToolError",
    "ToolResult",
    "UsageError",
    "Verdict",
    "Waiting",
    "__version__",
    "load_settings",
    "open",
    "open_platform",
    "script_model",
]


def test_the_public_names_are_exactly_these() -> None:
    """What public methods take and return is exported; a change here is an API change."""
    assert corral.__all__ == PUBLIC


def test_all_is_sorted_and_importable() -> None:
    names = [n for n in corral.__all__ if n != "__version__"]
    assert names == sorted(names, key=lambda n: (n[0].islower(), n))
    for name in corral.__all__:
        assert hasattr(corral, name), name


def test_py_typed_is_shipped() -> None:
    from importlib.resources import files

    assert files("corral").joinpath("py.typed").is_file()


def test_import_corral_loads_names_on_first_use() -> None:
    """``import corral`` stays light: the platform and its libraries load on first use, and
    the model stack only with a name that needs it (not with the platform)."""
    probe = (
        "import json, sys, corral\n"
        "before = sorted(sys.modules)\n"
        "corral.open\n"
        "opened = sorted(sys.modules)\n"
        "corral.script_model\n"
        "print(json.dumps([before, opened, sorted(sys.modules)]))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    before, opened, after = json.loads(done.stdout)
    heavy = {"corral.platform", "sqlalchemy", "pydantic_ai"}
    assert heavy.isdisjoint(before)
    assert {"corral.platform", "sqlalchemy"} <= set(opened)
    assert "pydantic_ai" not in opened
    assert heavy <= set(after)


def test_lazy_names_are_the_real_ones() -> None:
    from corral.errors import NotFound
    from corral.platform import Platform, open

    assert corral.open is open and corral.Platform is Platform and corral.NotFound is NotFound
    assert set(corral.__all__) <= set(dir(corral))
    assert not hasattr(corral, "Opne")
