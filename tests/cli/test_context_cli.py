"""`corral questions`, `goals`, `compactions`, `summarize`, `conversations meta`, for real."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.processes import script_model
from tests.cli.test_chat_cli import run

ASK = {
    "name": "ask_question",
    "args": {
        "questions": [
            {"question": "Colour?", "options": ["red", "green", "blue"], "multi_select": True},
            {"question": "Size?", "options": ["S", "M"]},
        ]
    },
}


def test_answering_a_question_from_another_process(data_dir: Path, tmp_path: Path) -> None:
    model = script_model(
        tmp_path,
        "ask",
        {"tool_calls": [ASK]},
        [{"when_result_contains": "red, blue", "text": "Red and blue, size M."}, {"text": "?"}],
    )
    asked = run(data_dir, "chat", "--model", model, "pick for me")
    assert asked.returncode == 3, asked.stderr
    assert "corral questions answer q_" in asked.stdout
    [question] = json.loads(run(data_dir, "questions", "list", "--json").stdout)
    listed = run(data_dir, "questions", "list").stdout
    assert "2. Size? [S / M]" in listed and "(several)" in listed
    wrong = run(data_dir, "questions", "answer", question["id"], "7", "M")
    assert wrong.returncode == 2 and "option 7 does not exist" in wrong.stderr
    answered = run(data_dir, "questions", "answer", question["id"], "1,blue", "2")
    assert answered.returncode == 0, answered.stderr
    assert "Red and blue, size M." in answered.stdout
    assert f"run {question['run_id']}: finished" in answered.stdout
    assert json.loads(run(data_dir, "questions", "list", "--json").stdout) == []
    every = json.loads(run(data_dir, "questions", "list", "--all", "--json").stdout)
    assert every[0]["answers"] == [["red", "blue"], "M"]


def test_goals_compactions_summarize_and_meta(data_dir: Path, tmp_path: Path) -> None:
    pasted = "a very long paste " * 400
    model = script_model(
        tmp_path,
        "trim",
        {
            "tool_calls": [
                {
                    "name": "compact_history",
                    "args": {"action": "remove", "targets": [{"sequence": 1}]},
                }
            ]
        },
        {"text": "Trimmed your paste."},
    )
    chat = run(data_dir, "chat", "--model", model, "--json", pasted)
    assert chat.returncode == 0, chat.stderr
    cid = json.loads(chat.stdout)["conversation_id"]

    goal = run(data_dir, "goals", "set", cid, "Tidy the repo", "-c", "lint clean", "--loop", "2")
    assert goal.returncode == 0, goal.stderr
    assert "Tidy the repo [set by user owner — locked]" in goal.stdout
    assert "Loop bound: cycle 1 of 2." in goal.stdout
    again = run(data_dir, "goals", "set", cid, "Other")
    assert again.returncode == 2 and "--replace" in again.stderr
    evolving = run(
        data_dir,
        "goals",
        "set",
        cid,
        "Nightly",
        "--workflow",
        "nightly",
        "--evolve",
        "agent",
        "--replace",
    )
    assert "Nightly [set by workflow nightly]\n" in evolving.stdout
    assert 'Closed cycles: v1 cleared "Tidy the repo"' in evolving.stdout
    assert run(data_dir, "goals", "clear", cid).returncode == 0

    [made] = json.loads(run(data_dir, "compactions", "list", cid, "--json").stdout)
    assert made["action"] == "remove" and made["applied"] is True
    assert made["tokens_saved"] > 1_000 and made["tokenizer"] == "cl100k_base"
    full = run(data_dir, "compactions", "show-full", cid, "--json")
    assert full.returncode == 0, full.stderr
    assert [c["applied"] for c in json.loads(full.stdout)] == [False]
    applied = json.loads(run(data_dir, "compactions", "apply", cid, made["id"], "--json").stdout)
    assert applied[0]["applied"] is True

    writer = script_model(tmp_path, "summary", final_text="We trimmed a long paste.")
    summary = run(data_dir, "summarize", cid, "--model", writer)
    assert summary.returncode == 0, summary.stderr
    assert (
        "We trimmed a long paste." in summary.stdout
        and "now read as this summary" in summary.stdout
    )

    meta = json.loads(run(data_dir, "conversations", "meta", cid).stdout)
    assert [(e["version"], e["outcome"]) for e in meta["sessionLedger"]] == [
        (1, "cleared"),
        (2, "cleared"),
    ]
    assert meta["sessionLedger"][1]["goal"]["set_by"]["evolve"] is True
    assert [c["source"] for c in meta["compactions"]] == ["compact_history", "summarize"]
    assert meta["goal"] is None and meta["conversation"]["id"] == cid
    ledger = json.loads(run(data_dir, "goals", "ledger", cid).stdout)
    assert ledger == meta["sessionLedger"]
