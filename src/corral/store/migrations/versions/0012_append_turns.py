"""append turns: PostgreSQL appends to one conversation take turns (nothing changes on SQLite)

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03 18:30:00.000000

``corral_last_seq(conversation)`` waits for the conversation's append lock (a transaction
advisory lock, held until the calling statement commits) and then reads the highest row
number. Being VOLATILE, its read takes a fresh snapshot after the wait, so it sees the
rows of the append that held the lock before it — which a subquery of the calling
statement, reading the statement's own earlier snapshot, would not.
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

# The two-int form keeps these keys apart from store/locks.py's bigint ones; 0x636f7272
# is "corr".
# PL/pgSQL keeps its plans between calls; a LANGUAGE sql body is planned on every call,
# which cost an append ~50 % more where this costs ~15 % (measured against no lock).
_CREATE = """
CREATE FUNCTION corral_last_seq(conversation varchar) RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    last integer;
BEGIN
    PERFORM pg_advisory_xact_lock(1668248178, hashtext(conversation));
    SELECT coalesce(max(seq), 0) INTO last
        FROM conversation_rows WHERE conversation_id = conversation;
    RETURN last;
END
$$
"""


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(_CREATE)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP FUNCTION IF EXISTS corral_last_seq(varchar)")
