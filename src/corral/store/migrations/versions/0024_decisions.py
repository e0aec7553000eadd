"""decisions: one pending-decision record for everything a run waits on a person for

Every approval and question gets its decision row (same id), so nothing stored before is
lost: pending/open ones stay pending, approved/denied/answered ones are decided (who and
when kept; the surface was not recorded then), closed ones closed. Approvals gain
``dispatched_at``: when the run's job started the approved call.

Revision ID: 0024_decisions
Revises: 0023_agent_pinned_tools
Create Date: 2026-12-05 07:10:00.000000
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0024_decisions"
down_revision = "0023_agent_pinned_tools"
branch_labels = None
depends_on = None

_APPROVAL_STATUS = {"pending": "pending", "approved": "decided", "denied": "decided"}
_QUESTION_STATUS = {"open": "pending", "answered": "decided"}


def _summary(tool: str, arguments: Any) -> str:
    if isinstance(arguments, str):
        arguments = json.loads(arguments)
    shown = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    return f"{tool} {shown}"[:300]


def _questions(raw: Any) -> str:
    if isinstance(raw, str):
        raw = json.loads(raw)
    return "\n".join(str(q.get("question", "")) for q in raw or ())[:300]


def _moment(value: Any) -> datetime | None:
    """A time read back through plain SQL (SQLite hands back text)."""
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value))


def upgrade() -> None:
    decisions = op.create_table(
        "decisions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=True),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("call_id", sa.String(length=100), nullable=True),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("offered_on", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("answer", sa.JSON(), nullable=True),
        sa.Column("decided_by", sa.String(length=64), nullable=True),
        sa.Column("decided_by_name", sa.String(length=100), nullable=True),
        sa.Column("surface", sa.String(length=16), nullable=True),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_decisions_status", "decisions", ["status"])
    op.create_index("ix_decisions_user_id", "decisions", ["user_id"])
    op.create_index("ix_decisions_run_id", "decisions", ["run_id"])
    with op.batch_alter_table("approvals") as batch:
        batch.add_column(sa.Column("dispatched_at", sa.DateTime(timezone=True), nullable=True))

    bind = op.get_bind()
    names: dict[str, str] = dict(bind.execute(sa.text("SELECT id, name FROM users")).all())
    rows: list[dict[str, Any]] = []
    approvals = bind.execute(
        sa.text(
            "SELECT id, status, tool, arguments, user_id, run_id, call_id, conversation_id, "
            "created_at, decided_at, decided_by, note FROM approvals"
        )
    ).mappings()
    for a in approvals:
        status = _APPROVAL_STATUS.get(a["status"], "closed")
        decided = a["status"] in ("approved", "denied")
        rows.append(
            {
                "id": a["id"],
                "kind": "approval",
                "status": status,
                "user_id": a["user_id"],
                "conversation_id": a["conversation_id"],
                "run_id": a["run_id"],
                "call_id": a["call_id"],
                "summary": _summary(a["tool"], a["arguments"]),
                "offered_on": [],
                "created_at": _moment(a["created_at"]),
                "answer": (
                    {"decision": "approve" if a["status"] == "approved" else "deny"}
                    if decided
                    else None
                ),
                "decided_by": a["decided_by"],
                "decided_by_name": names.get(a["decided_by"]),
                "decided_at": _moment(a["decided_at"]),
                "note": a["note"],
            }
        )
    questions = bind.execute(
        sa.text(
            "SELECT id, status, conversation_id, run_id, call_id, user_id, questions, answers, "
            "note, created_at, answered_at, answered_by FROM questions"
        )
    ).mappings()
    for q in questions:
        answers = q["answers"]
        if isinstance(answers, str):
            answers = json.loads(answers)
        rows.append(
            {
                "id": q["id"],
                "kind": "question",
                "status": _QUESTION_STATUS.get(q["status"], "closed"),
                "user_id": q["user_id"],
                "conversation_id": q["conversation_id"],
                "run_id": q["run_id"],
                "call_id": q["call_id"],
                "summary": _questions(q["questions"]),
                "offered_on": [],
                "created_at": _moment(q["created_at"]),
                "answer": {"answers": answers} if answers is not None else None,
                "decided_by": q["answered_by"],
                "decided_by_name": names.get(q["answered_by"]),
                "decided_at": _moment(q["answered_at"]),
                "note": q["note"],
            }
        )
    if rows:
        op.bulk_insert(decisions, rows)


def downgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("dispatched_at")
    op.drop_index("ix_decisions_run_id", table_name="decisions")
    op.drop_index("ix_decisions_user_id", table_name="decisions")
    op.drop_index("ix_decisions_status", table_name="decisions")
    op.drop_table("decisions")
