"""Settings from defaults, TOML and environment; live settings without restart."""

from __future__ import annotations

from pathlib import Path

import pytest

import corral
from corral.errors import ConfigError, NotFound, UsageError
from corral.settings import load_settings


def test_defaults(tmp_path: Path) -> None:
    settings = load_settings(tmp_path)
    assert settings.data_dir == tmp_path
    assert settings.effective_database_url == f"sqlite+aiosqlite:///{tmp_path}/corral.db"
    assert settings.sandbox == "auto" and settings.sandbox_uid == 65534


def test_toml_then_environment_then_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "corral.toml").write_text('port = 9000\nhost = "0.0.0.0"\nowner_name = "kim"\n')
    settings = load_settings(tmp_path)
    assert (settings.port, settings.host, settings.owner_name) == (9000, "0.0.0.0", "kim")
    monkeypatch.setenv("CORRAL_PORT", "9100")
    assert load_settings(tmp_path).port == 9100
    assert load_settings(tmp_path, port=9200).port == 9200


def test_bad_settings_are_explained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "corral.toml").write_text("port = 'many'\n")
    with pytest.raises(ConfigError, match="port"):
        load_settings(tmp_path)
    (tmp_path / "corral.toml").write_text("port = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(tmp_path)
    (tmp_path / "corral.toml").write_text("colour = 'red'\n")
    with pytest.raises(ConfigError, match="colour"):
        load_settings(tmp_path)
    monkeypatch.setenv("CORRAL_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(ConfigError, match="not a file"):
        load_settings(tmp_path)


async def test_live_settings_reach_another_open_platform(data_dir: Path) -> None:
    async with (
        corral.open(data_dir, live_refresh_seconds=0) as writer,
        corral.open(data_dir, live_refresh_seconds=0) as reader,
    ):
        assert (await reader.live_settings())["perf_slow_tool_ms"] == 30_000
        await writer.admin.set_live("perf_slow_tool_ms", 1234)
        assert (await reader.live_settings())["perf_slow_tool_ms"] == 1234
        await writer.admin.reset_live("perf_slow_tool_ms")
        assert (await reader.live_settings())["perf_slow_tool_ms"] == 30_000


async def test_live_setting_values_are_checked(data_dir: Path) -> None:
    async with corral.open(data_dir) as platform:
        with pytest.raises(NotFound, match="known live settings"):
            await platform.admin.set_live("nope", 1)
        with pytest.raises(UsageError, match="takes a int"):
            await platform.admin.set_live("perf_slow_tool_ms", "soon")
        with pytest.raises(UsageError, match="at least"):
            await platform.admin.set_live("tool_result_content_cap", 3)
        assert await platform.admin.set_live("shell_background_notify", "off") is False
        assert (await platform.live_settings())["perf_slow_tool_ms"] == 30_000
