"""The Trace tab in real Chromium: a run that parked for approval and resumed is shown as a
waterfall from the local trace store — both jobs nested, the approval stage's decision, the
parked and resumed events, a bar per span placed by start and duration."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from corral.tracing import use_provider
from tests.server.ui.conftest import LiveServer, Session, script

playwright_sync = __import__("playwright.sync_api", fromlist=["expect"])
expect = playwright_sync.expect


@pytest.fixture(scope="module", autouse=True)
def _traced() -> Iterator[None]:
    """The module's server platform traces (into its local store only): autouse, so it is
    set before the module's ``server`` opens the platform."""
    provider = TracerProvider()
    use_provider(provider)
    try:
        yield
    finally:
        use_provider(None)
        provider.shutdown()


def bar(row: Any) -> tuple[float, float]:
    """A waterfall row's bar: its start and width in the SVG's units (1000: the trace)."""
    rect = row.locator("svg.bar rect").first
    return float(rect.get_attribute("x") or -1), float(rect.get_attribute("width") or 0)


def test_the_trace_tab_shows_a_parked_and_resumed_run_as_a_waterfall(
    session: Session, server: LiveServer, tmp_path: Path
) -> None:
    platform = server.platform
    assert platform.kernel.traces.on
    call = {"name": "execute", "args": {"command": "echo traced", "reason": "Say it."}}
    model = script(tmp_path, {"tool_calls": [call]}, {"text": "Said."})
    rt = platform.runtime
    conversation = server.run(rt.start_conversation(model=model, profile="balanced"))
    turn = server.run(rt.chat("go", conversation_id=conversation.id))
    assert turn.status == "parked"
    server.run(platform.decide_approval(turn.approvals[0], "approve", surface="web"))
    assert server.run(rt.wait_run(turn.run_id)).status == "finished"
    server.run(platform.kernel.traces.flush())
    empty = server.run(rt.start_conversation(model=model))

    page = session.page
    page.goto(server.link())
    expect(page).to_have_url(re.compile(r"/ui$"))
    page.goto(f"{server.base_url}/ui/c/{conversation.id}")
    page.get_by_role("link", name="Trace").click()
    expect(page).to_have_url(re.compile(rf"/ui/c/{conversation.id}/trace$"))
    expect(page.locator(".trace-runs a.current")).to_have_text(turn.run_id)

    rows = page.locator("table.waterfall tr.span")
    names = [n.strip() for n in rows.locator(".span-name").all_inner_texts()]
    assert names[0] == "invoke_agent default", names
    assert names.count("invoke_agent default") == 2
    first, second = rows.filter(has_text="invoke_agent default").all()
    # The job after the decision continues the first job's trace, one level down.
    assert first.get_attribute("data-depth") == "0"
    assert second.get_attribute("data-depth") == "1"
    assert second.get_attribute("data-parent") == first.get_attribute("data-span")
    expect(first.locator(".event")).to_contain_text("corral.run.parked")
    expect(second.locator(".event")).to_contain_text("corral.run.resumed")
    expect(second.locator(".event")).to_contain_text("decision.surface=web")
    expect(first.locator("rect.mark")).to_have_count(1)

    approval = rows.filter(has_text="stage approval").first
    expect(approval.locator(".decision")).to_have_text("parked")
    executed = rows.filter(has_text="execute_tool execute").last
    expect(executed.locator(".decision")).to_have_count(0)
    assert int(executed.get_attribute("data-depth") or 0) == 2

    # Bars by start and duration: the first job starts the trace; the job after the
    # decision starts once it ended and runs to the trace's end.
    root_x, root_w = bar(first)
    assert root_x == 0.0 and 0 < root_w < 1000
    after_x, after_w = bar(second)
    assert root_w <= after_x < 1000
    assert after_x + after_w == pytest.approx(1000, abs=0.05)

    page.goto(f"{server.base_url}/ui/c/{empty.id}/trace")
    expect(page.locator("#trace")).to_contain_text("No runs in this conversation yet.")
    missing = page.goto(f"{server.base_url}/ui/c/{conversation.id}/trace?run=run_nope")
    assert missing is not None and missing.status == 404
