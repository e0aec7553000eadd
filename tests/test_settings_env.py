"""The settings' own ``CORRAL_*`` reader against pydantic-settings' environment source, which
it replaces at run time: every field, with valid and invalid values, gives the same values
(or fails in both, ours with a ConfigError naming the variable)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, create_model
from pydantic_settings import BaseSettings, EnvSettingsSource, SettingsError

from corral.errors import ConfigError
from corral.settings import ENV_PREFIX, Settings, load_settings
from corral.settings_env import environment_values

RAW_VALUES = [
    "",
    "None",
    "none",
    "null",
    "  spaced  ",
    "123",
    "-1",
    "1.5",
    "true",
    "auto",
    "http://gpu-box:8000/v1",
    "/some/path",
    '["/a", "/b"]',
    '[["make", "test"], ["python3", "x.py", "..."]]',
    "[[]]",
    '{"vllm": {"base_url": "http://gpu:8000/v1", "accepts": ["image"]}}',
    '{"vllm": {"base_url": 3}}',
    '"a json string"',
    "[1,",
    "{not json}",
]


class Endpoint(BaseModel):
    url: str


class Unions(BaseModel):
    """Union shapes Settings does not have today, read the same way when one is added."""

    words: list[str] | str = "x"
    table: dict[str, int] | None = None
    endpoint: Endpoint | None = None
    maybe_list: list[int] | None = None
    plain: int | None = None
    tupled: tuple[int, ...] = ()


def _twin(model: type[BaseModel]) -> type[BaseSettings]:
    fields: dict[str, Any] = {
        name: (info.annotation, info) for name, info in model.model_fields.items()
    }
    return create_model(f"{model.__name__}Twin", __base__=BaseSettings, **fields)


def _theirs(model: type[BaseModel]) -> dict[str, Any] | type[Exception]:
    try:
        return EnvSettingsSource(_twin(model), env_prefix=ENV_PREFIX)()
    except SettingsError:
        return SettingsError


def _ours(model: type[BaseModel]) -> dict[str, Any] | type[Exception]:
    try:
        return environment_values(model, ENV_PREFIX)
    except ConfigError:
        return SettingsError


def _clear(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.upper().startswith(ENV_PREFIX):
            monkeypatch.delenv(name)


@pytest.mark.parametrize("model", [Settings, Unions], ids=["Settings", "Unions"])
@pytest.mark.parametrize("raw", RAW_VALUES)
def test_every_field_reads_as_pydantic_settings_reads_it(
    model: type[BaseModel], raw: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _clear(monkeypatch)
    for field in model.model_fields:
        monkeypatch.setenv(f"{ENV_PREFIX}{field.upper()}", raw)
        assert _ours(model) == _theirs(model), (field, raw)
        monkeypatch.delenv(f"{ENV_PREFIX}{field.upper()}")


@pytest.mark.parametrize("name", ["corral_port", "Corral_Port", "CORRAL_PORT"])
def test_names_match_in_any_case(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _clear(monkeypatch)
    monkeypatch.setenv(name, "9100")
    assert _ours(Settings) == _theirs(Settings) == {"port": "9100"}


def test_all_fields_at_once_validate_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear(monkeypatch)
    valid = {
        "data_dir": "/tmp/corral-parity",
        "database_url": "sqlite+aiosqlite:////tmp/x.db",
        "package_paths": '["/a", "/b"]',
        "unconfined_allowed_commands": '[["make", "test"]]',
        "port": "9001",
        "sandbox": "landlock",
        "tavily_api_key": "secret",
        "model_endpoints": '{"vllm": {"base_url": "http://gpu:8000/v1"}}',
        "live_refresh_seconds": "0.5",
        "cluster_sweep_seconds": "5",
    }
    for field, raw in valid.items():
        monkeypatch.setenv(f"{ENV_PREFIX}{field}", raw)
    ours = _ours(Settings)
    assert ours == _theirs(Settings)
    assert isinstance(ours, dict)
    settings = Settings(**ours)
    assert settings.model_endpoints["vllm"].base_url == "http://gpu:8000/v1"
    assert settings.tavily_api_key is not None
    assert settings.tavily_api_key.get_secret_value() == "secret"
    assert (settings.port, settings.sandbox) == (9001, "landlock")


def test_bad_json_names_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORRAL_UNCONFINED_ALLOWED_COMMANDS", "[make test]")
    with pytest.raises(ConfigError, match="CORRAL_UNCONFINED_ALLOWED_COMMANDS must be JSON"):
        load_settings(tmp_path)
    monkeypatch.setenv("CORRAL_UNCONFINED_ALLOWED_COMMANDS", '[["make", ""]]')
    with pytest.raises(ConfigError, match="non-empty words"):
        load_settings(tmp_path)


def test_environment_sits_between_arguments_and_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint = {"base_url": "http://file:1/v1"}
    (tmp_path / "corral.toml").write_text(
        'owner_name = "file"\nhost = "10.0.0.1"\n[model_endpoints.a]\nbase_url = "http://file:1/v1"\n'
    )
    monkeypatch.setenv("corral_owner_name", "env")
    monkeypatch.setenv("CORRAL_MODEL_ENDPOINTS", json.dumps({"b": {"base_url": "http://env:2/v1"}}))
    settings = load_settings(tmp_path, model_endpoints={"c": endpoint})
    assert (settings.owner_name, settings.host) == ("env", "10.0.0.1")
    # as pydantic-settings did: arguments merge into the environment's table key by key
    assert sorted(settings.model_endpoints) == ["b", "c"]
    assert load_settings(tmp_path, owner_name="arg").owner_name == "arg"


def test_the_default_data_folder_is_made_absolute(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CORRAL_DATA_DIR", raising=False)
    assert Settings().data_dir.is_absolute()
