"""Typed settings: start-up settings from defaults, a TOML file and the environment.

Start-up settings (:class:`Settings`) are read once when the platform opens. Settings that
must change without a restart are *live* settings; their definitions are in
:mod:`corral.live_settings` and their overrides are stored in the database.

Precedence, highest first: keyword arguments to :func:`load_settings`, ``CORRAL_*``
environment variables, the TOML file (``corral.toml`` in the data folder, or the file named
by ``CORRAL_CONFIG``), defaults.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from corral.errors import ConfigError
from corral.settings_env import environment_values, merged_over

__all__ = ["DEFAULT_DATA_DIR", "ModelEndpoint", "Settings", "load_settings"]

DEFAULT_DATA_DIR = Path("corral-data")

SandboxMode = Literal["auto", "bubblewrap", "landlock", "unconfined"]
RunJobs = Literal["auto", "local", "cluster"]


class ModelEndpoint(BaseModel):
    """An OpenAI-compatible model server reached by base URL."""

    base_url: str = Field(description="e.g. http://gpu-box:8000/v1 for vLLM.")
    api_key_env: str | None = Field(
        default=None,
        description="Name of the environment variable holding the key (the key itself is "
        "never written in settings); unset sends a placeholder key.",
    )
    accepts: list[Literal["image", "audio"]] = Field(
        default_factory=list,
        description="Media the served model reads as real content; others get a marker.",
    )


ENV_PREFIX = "CORRAL_"


class Settings(BaseModel):
    """Settings read once at start-up (:func:`load_settings` reads the file and environment)."""

    model_config = ConfigDict(extra="forbid", validate_default=True)

    data_dir: Path = Field(default=DEFAULT_DATA_DIR, description="Folder holding all state.")
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy async URL; default is SQLite at <data_dir>/corral.db. "
        "Use postgresql+asyncpg://… for PostgreSQL.",
    )
    package_paths: list[Path] = Field(
        default_factory=list,
        description="Extra folders holding tool packages (besides CORRAL_PACKAGE_PATH).",
    )
    skill_paths: list[Path] = Field(
        default_factory=list,
        description="Extra folders holding skill bundles (each a folder with SKILL.md).",
    )
    api_url: str | None = Field(
        default=None,
        description="Base URL skill scripts reach the API at (${CORRAL_API}); unset means "
        "the address the server is bound to, else http://host:port.",
    )
    host: str = Field(default="127.0.0.1", description="Address `corral serve` binds.")
    port: int = Field(default=8765, ge=0, le=65535, description="Port `corral serve` binds.")
    public_url: str | None = Field(
        default=None,
        description="The server's address as people's browsers reach it, e.g. "
        "https://corral.example.org (OAuth callbacks of MCP servers); default http://HOST:PORT.",
    )
    owner_name: str = Field(default="owner", description="Name of the local owner account.")
    sandbox: SandboxMode = Field(
        default="auto",
        description="Kernel boundary for shell commands: 'auto' takes the strongest tier "
        "that works here (bubblewrap, then Landlock + seccomp); 'bubblewrap' or 'landlock' "
        "insist on one tier (commands are refused when it does not work); 'unconfined' is "
        "an explicit operator opt-out. `corral doctor` shows which tiers work.",
    )
    unconfined_allowed_commands: list[list[str]] = Field(
        default_factory=list,
        description="Without a kernel sandbox (sandbox = 'unconfined', and the host plane) "
        "commands that run code the analysis cannot read (inline interpreter code, scripts, "
        "make, npm run, pytest…) are refused; each entry here allows the invocations whose "
        "parsed argv, after wrappers, is exactly these words, or starts with them when the "
        'last word is "...", e.g. [["make", "test"], ["python3", "scripts/build.py", "..."]]. '
        "Set only by the operator (settings file or CORRAL_UNCONFINED_ALLOWED_COMMANDS as "
        "JSON); no API or tool changes it.",
    )
    sandbox_uid: int = Field(
        default=65534,
        ge=1,
        le=2**31 - 1,
        description="The unprivileged uid (and gid) sandboxed commands run as: inside "
        "bubblewrap's user namespace, or switched to in the Landlock tier when the "
        "platform runs as root (writable sources must then be writable by it).",
    )
    bwrap_path: str = Field(
        default="bwrap",
        description="The bubblewrap binary (a name looked up on PATH, or an absolute path).",
    )
    host_broker_socket: Path | None = Field(
        default=None,
        description="Unix socket of the operator's host broker (`corral host-broker`); "
        "unset means no host plane.",
    )
    default_model: str | None = Field(
        default=None,
        description="`provider:model` used when neither the chat nor the agent names one "
        "(e.g. anthropic:claude-sonnet-5-5, openai:gpt-5, google:gemini-2.5-pro, "
        "ollama:llama3.2, or an endpoint from model_endpoints).",
    )
    model_endpoints: dict[str, ModelEndpoint] = Field(
        default_factory=dict,
        description="OpenAI-compatible servers (vLLM, Ollama, LM Studio…) by name: "
        "`<name>:<model>` then reaches the endpoint's base_url.",
    )
    live_refresh_seconds: float = Field(
        default=1.0,
        ge=0,
        description="How stale cached live settings and tool configuration may get before "
        "they are re-read from the database, in the background while requests keep the "
        "cached copy (0: before every answer; changes made by this process apply at once).",
    )

    run_jobs: RunJobs = Field(
        default="auto",
        description="Where runs advance: 'local' in this process (the embedded default); "
        "'cluster' on `corral worker` processes through procrastinate over PostgreSQL; "
        "'auto' is 'cluster' for `corral serve` and `corral worker` on PostgreSQL, else "
        "'local'.",
    )
    worker_concurrency: int = Field(
        default=10, ge=1, le=1000, description="Runs one `corral worker` advances at once."
    )
    worker_heartbeat_seconds: float = Field(
        default=0.5, gt=0, description="How often a `corral worker` says it is alive."
    )
    worker_stalled_seconds: float = Field(
        default=3.0,
        gt=0,
        description="A worker silent this long is dead: its runs are taken over elsewhere "
        "(six missed heartbeats at the default; a worker that was only paused finds its "
        "writes refused and lets go, see fencing in the README).",
    )
    worker_shutdown_grace_seconds: float = Field(
        default=10.0,
        ge=0,
        description="On SIGTERM a worker waits this long for its runs to settle, then hands "
        "the rest over: another worker continues them from their last persisted step.",
    )
    cluster_outage_retries: int = Field(
        default=20,
        ge=0,
        description="How many times a run whose job met a database outage is handed back "
        "and retried from its last persisted step; the next outage ends it failed saying "
        "why (an error that does not pass, such as a full disk, is not retried forever).",
    )
    database_full_wait_seconds: float = Field(
        default=30.0,
        ge=0,
        description="How long a command, `corral serve` or `corral worker` that starts while "
        "the PostgreSQL server has no connection left (too many clients) waits for one to "
        "free before it gives up saying so.",
    )
    cluster_sweep_seconds: int = Field(
        default=1,
        ge=1,
        le=30,
        description="How often the cluster looks for stalled jobs and queued runs without "
        "a job (a divisor of 60).",
    )

    tavily_api_key: SecretStr | None = Field(
        default=None, description="Tavily search API key (web_search); unset skips Tavily."
    )
    tavily_api_url: str = Field(
        default="https://api.tavily.com/search", description="Tavily's search endpoint."
    )
    brave_api_key: SecretStr | None = Field(
        default=None, description="Brave Search API subscription token (web_search)."
    )
    brave_api_url: str = Field(
        default="https://api.search.brave.com/res/v1/web/search",
        description="Brave's web search endpoint.",
    )
    searxng_url: str | None = Field(
        default=None,
        description="Base URL of a SearXNG instance with the JSON format enabled (web_search).",
    )
    keyless_search_url: str = Field(
        default="https://html.duckduckgo.com/html/",
        description="The keyless engine web_search falls back to (DuckDuckGo's HTML endpoint).",
    )
    telegram_api_url: str = Field(
        default="https://api.telegram.org",
        description="The Telegram Bot API base URL (channels); its host is the only one a "
        "Telegram connection reaches.",
    )
    slack_api_url: str = Field(
        default="https://slack.com/api",
        description="The Slack Web API base URL (channels); its host is the only one a Slack "
        "connection reaches.",
    )

    @field_validator("data_dir")
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        return Path(os.path.abspath(value.expanduser()))

    @field_validator("unconfined_allowed_commands")
    @classmethod
    def _word_lists(cls, value: list[list[str]]) -> list[list[str]]:
        for entry in value:
            if not entry or any(not word or "\x00" in word for word in entry):
                raise ValueError(
                    f"unconfined_allowed_commands entry {entry!r} must be a non-empty list of "
                    'non-empty words, such as ["make", "test"]'
                )
        return value

    @field_validator("cluster_sweep_seconds")
    @classmethod
    def _divides_a_minute(cls, value: int) -> int:
        if 60 % value:
            raise ValueError(f"cluster_sweep_seconds must divide 60 (1, 2, 3, 5, …), not {value}")
        return value

    @field_validator("package_paths", "skill_paths", mode="before")
    @classmethod
    def _split_paths(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [p for p in value.split(os.pathsep) if p]
        return value

    @property
    def database_path(self) -> Path | None:
        """The SQLite file when the embedded default is used, else None."""
        if self.database_url is None:
            return self.data_dir / "corral.db"
        prefix = "sqlite+aiosqlite:///"
        if self.database_url.startswith(prefix):
            return Path(self.database_url[len(prefix) :])
        return None

    @property
    def effective_database_url(self) -> str:
        if self.database_url is not None:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'corral.db').resolve()}"

    @property
    def hosted_run_jobs(self) -> Literal["local", "cluster"]:
        """Where runs advance under `corral serve` and `corral worker` ('auto' resolved)."""
        if self.run_jobs == "auto":
            postgres = self.effective_database_url.startswith("postgresql")
            return "cluster" if postgres else "local"
        return self.run_jobs

    @property
    def drive_dir(self) -> Path:
        """Root of the project drive, the `data` source."""
        return self.data_dir / "drive"

    @property
    def private_dir(self) -> Path:
        """Platform-internal files (keys, run folders) that no source may cover."""
        return self.data_dir / "private"

    @property
    def drive_private_dir(self) -> Path:
        """The platform's area inside the drive (``data://.corral``: delegate run folders);
        reached only through the drive's owner-checked URIs, never by a command."""
        return self.drive_dir / ".corral"

    def protected_paths(self) -> list[Path]:
        """The platform's own files: no command, tool or source may reach them, whatever a
        source covers."""
        paths = [self.private_dir, self.drive_private_dir, self.data_dir / "corral.toml"]
        paths.append(self.data_dir / "rules")  # permission rules: a command must not add one
        config = os.environ.get("CORRAL_CONFIG")
        if config:
            paths.append(Path(config))  # the settings file may hold provider keys
        database = self.database_path
        if database is not None:
            paths += [Path(f"{database}{end}") for end in ("", "-wal", "-shm", "-journal")]
        return paths


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"settings file {str(path)!r} is not valid TOML: {exc}") from exc


def load_settings(data_dir: str | os.PathLike[str] | None = None, **overrides: Any) -> Settings:
    """Build settings from defaults, a TOML file, the environment and ``overrides``.

    The TOML file is ``CORRAL_CONFIG`` when set, else ``<data_dir>/corral.toml`` if present.
    """
    if data_dir is not None:
        overrides["data_dir"] = Path(data_dir)
    env_dir = os.environ.get("CORRAL_DATA_DIR")
    base_dir = Path(overrides.get("data_dir") or env_dir or DEFAULT_DATA_DIR)
    config_env = os.environ.get("CORRAL_CONFIG")
    config_path = Path(config_env) if config_env else base_dir / "corral.toml"
    file_values: dict[str, Any] = {}
    if config_env and not config_path.is_file():
        raise ConfigError(
            f"CORRAL_CONFIG names {str(config_path)!r}, which is not a file; "
            "point it at a TOML settings file or unset it."
        )
    if config_path.is_file():
        file_values = _read_toml(config_path)
    environment = environment_values(Settings, ENV_PREFIX)
    # The file sits below the environment (a key set in both is the environment's); keyword
    # arguments sit above both, their tables merged into the environment's key by key.
    above = {key: value for key, value in file_values.items() if key not in environment}
    merged = merged_over(environment, {**above, **overrides})
    try:
        return Settings(**merged)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
            for err in exc.errors()
        )
        raise ConfigError(
            f"invalid settings ({problems}); check {str(config_path)!r} and CORRAL_* variables"
        ) from exc
