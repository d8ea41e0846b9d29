"""span rows compact: a span's content stored once, in its own attributes

From here, a span whose attributes and events are stored whole keeps a compact row (its
``metadata`` alone): its messages, output and input are mapped again from its stored
attributes when it is read (``engine/storage/span_rows.py``). Rows stored before stay
whole and are read as they are, so going up changes nothing stored. Going down, compact
rows are made whole again, for the code of 0017 that reads a row as it is stored.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from engine.storage.span_rows import full_row, is_compact

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

#: Spans read (and their compact rows written back) a statement.
BATCH = 500

_SPANS = sa.table(
    "spans",
    sa.column("id", sa.String),
    sa.column("row", sa.JSON),
    sa.column("attributes", sa.JSON),
    sa.column("events", sa.JSON),
)


def upgrade() -> None:
    pass  # whole rows stay valid: new spans are stored compact from here


def downgrade() -> None:
    bind = op.get_bind()
    spans = _SPANS.c
    write = (
        sa.update(_SPANS)
        .where(spans.id == sa.bindparam("span_pk"))
        .values(row=sa.bindparam("whole_row"))
    )
    after = ""
    while True:
        page = bind.execute(
            sa.select(spans.id, spans.row, spans.attributes, spans.events)
            .where(spans.id > after)
            .order_by(spans.id)
            .limit(BATCH)
        ).all()
        if not page:
            return
        made_whole = [
            {"span_pk": pk, "whole_row": full_row(row, attributes or {}, events or [])}
            for pk, row, attributes, events in page
            if is_compact(row)
        ]
        if made_whole:
            bind.execute(write, made_whole)
        after = page[-1][0]
