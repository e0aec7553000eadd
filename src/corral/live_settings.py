"""Definitions of live settings: values stored in the database that apply without restart.

Each definition names its type, default, bounds and meaning. The stored overrides live in
the ``live_settings`` table; :class:`corral.store.config.ConfigState` serves the current
values.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from corral.errors import NotFound, UsageError

__all__ = ["LIVE_SETTINGS", "LiveSettingDef", "coerce_live_value", "live_defaults"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveSettingDef:
    key: str
    type: type[int] | type[float] | type[bool] | type[str] | type[dict[str, Any]]
    default: int | float | bool | str | dict[str, Any]
    description: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    """For a text setting: the only values it accepts (empty: any text)."""
    checked_by: str = ""
    """Who checks the value's content on save beyond its type (see ``Admin.check_live``)."""


def _defs(*items: LiveSettingDef) -> dict[str, LiveSettingDef]:
    return {item.key: item for item in items}


LIVE_SETTINGS: dict[str, LiveSettingDef] = _defs(
    LiveSettingDef(
        key="decisions_expire_days",
        type=float,
        default=7.0,
        minimum=0.001,
        description="Days a pending decision (approval, question…) waits for an answer; "
        "then the sweep ends it as a denial (a question as declined) and its run goes on.",
    ),
    LiveSettingDef(
        key="perf_slow_tool_ms",
        type=int,
        default=30_000,
        minimum=1,
        description="A tool call taking at least this long writes one perf.slow record.",
    ),
    LiveSettingDef(
        key="trace_content",
        type=bool,
        default=False,
        description="Trace spans also record content: tool arguments and results, model "
        "prompts and responses (secret arguments left out, known secrets redacted as in "
        "rows). Off: names, ids and decisions only.",
    ),
    LiveSettingDef(
        key="trace_keep_days",
        type=float,
        default=7.0,
        minimum=0.01,
        description="Days the local trace store keeps a span (corral trace RUN, the web "
        "UI's Trace tab); older spans are deleted.",
    ),
    LiveSettingDef(
        key="trace_stages",
        type=str,
        default="notable",
        choices=("notable", "all"),
        description="Which pipeline stages of a traced tool call get a span: notable (those "
        "that did not pass the call on, or took 1 ms or more) or all of them.",
    ),
    LiveSettingDef(
        key="tool_result_content_cap",
        type=int,
        default=100_000,
        minimum=500,
        description="Characters of tool result content handed to the model, for every tool.",
    ),
    LiveSettingDef(
        key="shell_max_output",
        type=int,
        default=200_000,
        minimum=1_000,
        description="Characters of shell output captured per command (newest lines kept).",
    ),
    LiveSettingDef(
        key="live_shell_flush_ms",
        type=int,
        default=100,
        minimum=10,
        description="Minimum gap between two live output frames of a running command.",
    ),
    LiveSettingDef(
        key="live_shell_frame_max",
        type=int,
        default=16_384,
        minimum=256,
        description="Largest live output frame, in characters.",
    ),
    LiveSettingDef(
        key="live_shell_stream_cap",
        type=int,
        default=2_000_000,
        minimum=1_000,
        description="Total live output streamed per command before frames stop.",
    ),
    LiveSettingDef(
        key="background_shell_ring",
        type=int,
        default=262_144,
        minimum=1_024,
        description="Characters of recent output each background shell keeps in memory.",
    ),
    LiveSettingDef(
        key="shell_report_tail_chars",
        type=int,
        default=4_000,
        minimum=200,
        description="Output budget (head + tail) of a background shell's completion report.",
    ),
    LiveSettingDef(
        key="web_fetch_text_max_bytes",
        type=int,
        default=5 * 1024 * 1024,
        minimum=1024,
        description="Largest text body (HTML, JSON, XML, Markdown, text) a fetch reads.",
    ),
    LiveSettingDef(
        key="web_fetch_pdf_max_bytes",
        type=int,
        default=20 * 1024 * 1024,
        minimum=1024,
        description="Largest PDF a fetch reads; above it the call fails naming this limit.",
    ),
    LiveSettingDef(
        key="web_fetch_max_redirects",
        type=int,
        default=5,
        minimum=0,
        maximum=20,
        description="Redirect hops a fetch follows, each re-validated.",
    ),
    LiveSettingDef(
        key="web_allowed_ports",
        type=str,
        default="80,443,8080,8443",
        description="Comma-separated ports a fetched URL may name, on every hop.",
    ),
    LiveSettingDef(
        key="web_deny_hosts",
        type=str,
        default="",
        description="Comma-separated hosts never fetched (example.com also denies its "
        "subdomains; *.example.com only the subdomains).",
    ),
    LiveSettingDef(
        key="web_deny_networks",
        type=str,
        default="",
        description="Comma-separated extra networks (CIDR) never connected to.",
    ),
    LiveSettingDef(
        key="web_search_auto_order",
        type=str,
        default="tavily,brave,searxng",
        description="Comma-separated providers web_search's auto strategy walks, in order "
        "(native, tavily, brave, searxng); the keyless engine is always the last resort.",
    ),
    LiveSettingDef(
        key="web_search_auto_providers",
        type=int,
        default=2,
        minimum=1,
        maximum=5,
        description="How many configured providers auto asks at once and fuses.",
    ),
    LiveSettingDef(
        key="web_search_timeout_ms",
        type=int,
        default=10_000,
        minimum=500,
        maximum=120_000,
        description="Time budget of one search request to Tavily, Brave, SearXNG or the "
        "keyless engine.",
    ),
    LiveSettingDef(
        key="web_search_native_timeout_ms",
        type=int,
        default=60_000,
        minimum=1_000,
        maximum=300_000,
        description="Time budget of one native search on the conversation's model.",
    ),
    LiveSettingDef(
        key="web_search_native_fee_usd",
        type=float,
        default=0.01,
        minimum=0,
        description="Vendor fee per native web search, recorded with its tokens.",
    ),
    LiveSettingDef(
        key="web_search_research_variants",
        type=int,
        default=3,
        minimum=0,
        maximum=8,
        description="Follow-up query variants a research-mode search runs.",
    ),
    LiveSettingDef(
        key="web_search_research_model_variants",
        type=int,
        default=2,
        minimum=0,
        maximum=5,
        description="Research variants the conversation's model may write (0: only the "
        "deterministic ones).",
    ),
    LiveSettingDef(
        key="web_search_research_paid_cap",
        type=int,
        default=1,
        minimum=0,
        maximum=8,
        description="How many research follow-up variants may use a paid provider (Tavily, "
        "Brave, native); the rest run on SearXNG or the keyless engine.",
    ),
    LiveSettingDef(
        key="web_search_fetch_top_chars",
        type=int,
        default=8_000,
        minimum=500,
        maximum=100_000,
        description="Characters of page Markdown research mode attaches per fetched result.",
    ),
    LiveSettingDef(
        key="shell_background_notify",
        type=bool,
        default=True,
        description="Whether a finished background shell reports into its conversation.",
    ),
    LiveSettingDef(
        key="background_wake_client_grace_ms",
        type=int,
        default=3_000,
        minimum=0,
        maximum=60_000,
        description="How long a report or inbox message waits for its starter's open browser "
        "to claim the turn it starts (streaming there) before the server runs it; 0: at once.",
    ),
    LiveSettingDef(
        key="shell_network",
        type=bool,
        default=False,
        description="Whether sandboxed shell commands may use the network (off: a network "
        "namespace with loopback only).",
    ),
    LiveSettingDef(
        key="shell_network_mode",
        type=str,
        default="proxy",
        choices=("proxy", "off"),
        description="While shell_network is off: 'proxy' gives bubblewrap-tier commands the "
        "egress proxy (only the domains the live setting egress allows; when it allows none, "
        "no network), 'off' no network at all.",
    ),
    LiveSettingDef(
        key="egress_ask_seconds",
        type=float,
        default=120.0,
        minimum=1,
        maximum=3600,
        description="How long a sandboxed connection to a domain no egress rule matches is "
        "held while the person is asked (egress unmatched 'ask'); never beyond the call's own "
        "timeout. Unanswered by then, the connection is refused.",
    ),
    LiveSettingDef(
        key="egress",
        type=dict,
        default={},
        checked_by="corral.shell.egress",
        description="The egress policy of network mode proxy (JSON): allowed_domains "
        "('*.example.com' wildcards, or objects with domain, methods, paths, ports), "
        "denied_domains (checked first), unmatched ('refuse' or 'ask'), "
        "allowed_private_hosts, and agents/workflows/profiles sections replacing the default.",
    ),
    LiveSettingDef(
        key="shell_stop_grace_ms",
        type=int,
        default=2_000,
        minimum=50,
        maximum=3_000,
        description="After Stop or a timeout, how long a command's processes get between "
        "SIGTERM and SIGKILL (at most 3 s: Stop gives a tool 5 s to wind down).",
    ),
    LiveSettingDef(
        key="checkpoints",
        type=bool,
        default=True,
        description="Whether writing calls (execute, fs_write, fs_edit, MCP tools run in a "
        "source) keep a checkpoint of what they change, to rewind. The first call on a "
        "source copies its files once; later calls look only at what inotify saw move.",
    ),
    LiveSettingDef(
        key="checkpoint_keep_count",
        type=int,
        default=100,
        minimum=1,
        description="Checkpoints each conversation keeps (the newest); older ones are "
        "dropped, and the file contents no kept checkpoint needs are removed.",
    ),
    LiveSettingDef(
        key="checkpoint_keep_days",
        type=int,
        default=30,
        minimum=1,
        description="Days a checkpoint is kept before it is dropped.",
    ),
    LiveSettingDef(
        key="checkpoint_max_files",
        type=int,
        default=5_000,
        minimum=0,
        maximum=1_000_000,
        description="A command that may write gets a checkpoint (what it changed, kept to "
        "rewind) only in writable sources of at most this many entries; 0 turns checkpoints "
        "off. The first snapshot of a source copies each of its files once.",
    ),
    LiveSettingDef(
        key="background_shell_log_cap",
        type=int,
        default=256 * 1024 * 1024,
        minimum=1024 * 1024,
        description="Bytes of output log (JSONL) kept on disk per background shell; beyond "
        "it one row says what was left out.",
    ),
    LiveSettingDef(
        key="background_shell_max_seconds",
        type=int,
        default=4 * 3600,
        minimum=10,
        description="Lifetime ceiling of a background shell that named no timeout.",
    ),
    LiveSettingDef(
        key="background_shells_per_user",
        type=int,
        default=8,
        minimum=1,
        description="Background shells one user may have running at once.",
    ),
    LiveSettingDef(
        key="skills_prompt_chars",
        type=int,
        default=4_000,
        minimum=200,
        description="Budget of the system prompt's list of available skills (names and "
        "one-line descriptions); skills past it are counted, not listed.",
    ),
    LiveSettingDef(
        key="tool_search",
        type=str,
        default="auto",
        choices=("auto", "on", "off"),
        description="Tool search: 'auto' defers the tools beyond the native and pinned ones "
        "(listed by name only, found and loaded with tool_search) when the visible tools' "
        "schemas take more than tool_search_share_percent of the model's context; 'on' "
        "always defers them; 'off' never does.",
    ),
    LiveSettingDef(
        key="tool_search_share_percent",
        type=float,
        default=10.0,
        minimum=0.1,
        maximum=100.0,
        description="Share of the model's context (genai-prices data; 128,000 tokens for a "
        "model it does not know) the visible tools' schemas may take before tool_search "
        "'auto' defers tools.",
    ),
    LiveSettingDef(
        key="delegate_answer_cap_chars",
        type=int,
        default=20_000,
        minimum=1_000,
        description="Longest delegate answer the parent receives; a longer one keeps both ends "
        "around a marker naming what was dropped and where the full transcript is.",
    ),
    LiveSettingDef(
        key="delegate_background_max",
        type=int,
        default=4,
        minimum=0,
        description="Background delegate runs a person may have in flight at once; past it "
        "a background delegate call is refused (code delegate_background_limit).",
    ),
    LiveSettingDef(
        key="delegate_report_back",
        type=bool,
        default=True,
        description="Whether a finished background delegate run reports into its "
        "conversation (its answer stays in its transcript either way).",
    ),
    LiveSettingDef(
        key="run_step_budget",
        type=int,
        default=50,
        minimum=1,
        description="Model turns a run may take unless its agent sets its own step budget.",
    ),
    LiveSettingDef(
        key="run_wall_clock_limit_s",
        type=int,
        default=8 * 3600,
        minimum=1,
        description="Ceiling on the time a run spends running (parked time does not count).",
    ),
    LiveSettingDef(
        key="runs_max_concurrent",
        type=int,
        # Measured (bench/embedded_concurrency.py): runs mostly wait on models and tools, so
        # 30 took 200 five-step conversations in 10 s against 28 s at 8, for the same CPU;
        # 64 gained little more and doubled the waits for SQLite's write lock.
        default=30,
        minimum=1,
        description="Runs this process advances at once; further runs wait queued.",
    ),
    LiveSettingDef(
        key="inbox_hop_ceiling",
        type=int,
        default=4,
        minimum=0,
        description="How many agent-to-agent hops a chain of inbox messages may take.",
    ),
    LiveSettingDef(
        key="inbox_max_undelivered",
        type=int,
        default=20,
        minimum=1,
        description="Inbox messages a conversation may hold undelivered before more are refused.",
    ),
    LiveSettingDef(
        key="inbox_min_interval_ms",
        type=int,
        default=2_000,
        minimum=0,
        description="Minimum gap between two inbox messages to the same conversation.",
    ),
    LiveSettingDef(
        key="http_body_max_bytes",
        type=int,
        default=1_000_000,
        minimum=1_024,
        description="Largest HTTP request body the server reads; a larger one is answered 413.",
    ),
    LiveSettingDef(
        key="workflow_wait_cap_s",
        type=int,
        default=120,
        minimum=0,
        maximum=300,
        description="Longest wait_seconds a workflow run or get may wait for a run to end.",
    ),
    LiveSettingDef(
        key="workflow_runtime_ceiling_minutes",
        type=int,
        default=480,
        minimum=1,
        description="Platform ceiling on a workflow's max_runtime_minutes (wall clock per run).",
    ),
    LiveSettingDef(
        key="workflow_missed_fire",
        type=str,
        default="run_once",
        choices=("run_once", "skip"),
        description=(
            "A schedule slot missed while no scheduler ran: run_once fires the latest missed "
            "slot once at start-up; skip records it as skipped and waits for the next slot."
        ),
    ),
    LiveSettingDef(
        key="workflow_hook_rate_per_minute",
        type=int,
        default=30,
        minimum=1,
        description="Runs one webhook may start per minute; more are answered 429.",
    ),
    LiveSettingDef(
        key="workflow_hook_idempotency_hours",
        type=int,
        default=24,
        minimum=1,
        maximum=24 * 30,
        description=(
            "How long a webhook remembers a delivery's Idempotency-Key: a repeat within it "
            "starts no run (same body: answered with the first run's id; other body: 422)."
        ),
    ),
    LiveSettingDef(
        key="mcp_http_profile",
        type=str,
        default="balanced",
        choices=("safe", "balanced", "auto"),
        description=(
            "Permission profile of every call an external MCP client makes through /mcp "
            "(a call that needs approval returns a pending result with its approval id)."
        ),
    ),
    LiveSettingDef(
        key="channels_pairing_code_ttl_s",
        type=int,
        default=600,
        minimum=30,
        maximum=7 * 86400,
        description="How long a pairing code an unknown channel sender receives stays valid.",
    ),
    LiveSettingDef(
        key="channels_flood_per_minute",
        type=int,
        default=20,
        minimum=1,
        description="Messages one chat may send per minute; more are dropped with one notice.",
    ),
    LiveSettingDef(
        key="channels_send_attempts",
        type=int,
        default=4,
        minimum=1,
        maximum=10,
        description="Attempts for one outbound channel message before it counts as failed.",
    ),
    LiveSettingDef(
        key="channels_retry_base_ms",
        type=int,
        default=250,
        minimum=0,
        maximum=60_000,
        description="First back-off between outbound attempts; it doubles on each retry.",
    ),
    LiveSettingDef(
        key="channels_relay_sweep_ms",
        type=int,
        default=2000,
        minimum=50,
        maximum=600_000,
        description="How often the serving process looks for bound conversations with rows "
        "not yet sent to their chat (rows another process stored, e.g. a cluster worker).",
    ),
    LiveSettingDef(
        key="channels_outage_retry_s",
        type=int,
        default=900,
        minimum=0,
        maximum=7 * 86400,
        description="After channels_send_attempts, how long an outbound channel message is "
        "still retried through a vendor outage (backing off to 20 s apart) before it is "
        "recorded as undelivered: a card in the conversation and the channel's 'undelivered' "
        "count.",
    ),
    LiveSettingDef(
        key="channels_claim_lease_s",
        type=int,
        default=30,
        minimum=2,
        maximum=3600,
        description="How long a process's claim on a chat it sends to lasts unless renewed "
        "(it renews at every vendor call): a process that died holding one is succeeded this "
        "long after.",
    ),
    LiveSettingDef(
        key="channels_api_hosts",
        type=str,
        default="",
        description="Vendor API hosts channels may reach although the web fetch policy "
        "refuses them (loopback or private addresses, other ports): comma-separated 'host' "
        "or 'host:port', e.g. a self-hosted Telegram Bot API server named by "
        "telegram_api_url. Only the channel calls to these hosts skip the fetch policy.",
    ),
    LiveSettingDef(
        key="budgets",
        type=dict,
        default={},
        checked_by="corral.runtime.budgets",
        description="Budgets by agent and by permission profile: "
        '{"agents": {"NAME": LIMITS}, "profiles": {"auto": LIMITS}}, where LIMITS is e.g. '
        '{"total_tokens": 200000, "cost_usd": 2, "per_tool": {"execute": 40}}; a run gets '
        "the tightest budget that applies to it.",
    ),
    LiveSettingDef(
        key="hooks",
        type=dict,
        default={},
        checked_by="corral.runtime.hooks",
        description="Operator hooks (Claude Code's hooks object, JSON), applied after those "
        "of <data_dir>/hooks.json; a value that does not parse is refused with the reason.",
    ),
)


def live_defaults() -> dict[str, Any]:
    return {key: item.default for key, item in LIVE_SETTINGS.items()}


def coerce_live_value(key: str, value: Any) -> Any:
    """Validate ``value`` for live setting ``key`` and return it in the setting's type."""
    definition = LIVE_SETTINGS.get(key)
    if definition is None:
        known = ", ".join(sorted(LIVE_SETTINGS))
        raise NotFound(f"no live setting named {key!r}; known live settings: {known}")
    kind = definition.type
    result: Any
    try:
        if kind is bool:
            if isinstance(value, bool):
                result = value
            elif isinstance(value, str) and value.lower() in {"true", "1", "yes", "on"}:
                result = True
            elif isinstance(value, str) and value.lower() in {"false", "0", "no", "off"}:
                result = False
            else:
                raise ValueError(value)
        elif kind is int:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError(value)
            result = int(value)
        elif kind is dict:
            parsed = json.loads(value) if isinstance(value, str) else value
            if not isinstance(parsed, dict):
                raise ValueError(value)
            result = parsed
        elif kind is float:
            if isinstance(value, bool):
                raise ValueError(value)
            result = float(value)
        else:
            result = str(value)
            if definition.choices and result not in definition.choices:
                raise ValueError(value)
    except (TypeError, ValueError):
        if kind is dict:
            raise UsageError(f"live setting {key!r} takes a JSON object, not {value!r}") from None
        if definition.choices:
            allowed = ", ".join(repr(c) for c in definition.choices)
            raise UsageError(
                f"live setting {key!r} takes one of {allowed}, not {value!r}"
            ) from None
        raise UsageError(f"live setting {key!r} takes a {kind.__name__}, not {value!r}") from None
    if definition.minimum is not None and result < definition.minimum:
        raise UsageError(f"live setting {key!r} must be at least {definition.minimum:g}")
    if definition.maximum is not None and result > definition.maximum:
        raise UsageError(f"live setting {key!r} must be at most {definition.maximum:g}")
    return result
