"""run row blocks: a run's input rows stored a block of rows at a time

``run_rows`` (one row a database row) becomes ``run_row_blocks``: one JSON array of up
to 100 consecutive input rows a database row (``engine/storage/run_blocks.py``). Each
stored row moves as its stored JSON text, unchanged; results (``row_results``) and their
indexes stay as they are. Going down makes the rows one a database row again.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-26
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

#: Rows a block (engine.storage.run_blocks.ROWS_PER_BLOCK when this migration was written).
ROWS_PER_BLOCK = 100
#: Rows read a statement when moving a run's rows.
READ = 10_000


def upgrade() -> None:
    op.create_table(
        "run_row_blocks",
        sa.Column("run_id", sa.String(40), nullable=False),
        sa.Column("row_start", sa.Integer(), nullable=False),
        sa.Column("row_stop", sa.Integer(), nullable=False),
        sa.Column("rows", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name="fk_run_row_blocks_run_id_runs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "row_start", name="pk_run_row_blocks"),
    )
    bind = op.get_bind()
    runs = list(bind.execute(sa.text("SELECT DISTINCT run_id FROM run_rows")).scalars())
    insert = sa.text(
        "INSERT INTO run_row_blocks (run_id, row_start, row_stop, rows) "
        "VALUES (:run_id, :row_start, :row_stop, :rows)"
    )
    for run_id in runs:
        blocks = list(_blocks(bind, run_id))
        for start in range(0, len(blocks), 50):
            bind.execute(insert, blocks[start : start + 50])
    op.drop_table("run_rows")


def _blocks(bind: Any, run_id: str) -> Iterator[dict[str, Any]]:
    """A run's stored rows as blocks of consecutive rows, each row's JSON text as stored."""
    block: list[str] = []
    start = stop = 0
    after = -1
    while True:
        found = bind.execute(
            sa.text(
                "SELECT row_index, CAST(data AS TEXT) FROM run_rows "
                "WHERE run_id = :r AND row_index > :after ORDER BY row_index LIMIT :n"
            ),
            {"r": run_id, "after": after, "n": READ},
        ).all()
        if not found:
            break
        for index, text in found:
            if block and (index != stop or len(block) >= ROWS_PER_BLOCK):
                yield _block(run_id, start, stop, block)
                block = []
            if not block:
                start = index
            block.append(text)
            stop = index + 1
        after = found[-1][0]
    if block:
        yield _block(run_id, start, stop, block)


def _block(run_id: str, start: int, stop: int, texts: list[str]) -> dict[str, Any]:
    # "[ " marks a block written by json (engine.storage.run_blocks.JSON_MARK): its rows'
    # stored text may hold integers past 64 bits, which only json reads back exactly
    rows = f"[ {','.join(texts)}]"
    return {"run_id": run_id, "row_start": start, "row_stop": stop, "rows": rows}


def downgrade() -> None:
    op.create_table(
        "run_rows",
        sa.Column("run_id", sa.String(40), nullable=False),
        sa.Column("row_index", sa.Integer(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name="fk_run_rows_run_id_runs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "row_index", name="pk_run_rows"),
    )
    bind = op.get_bind()
    rows = sa.table(
        "run_rows",
        sa.column("run_id", sa.String),
        sa.column("row_index", sa.Integer),
        sa.column("data", sa.JSON),
    )
    keys = bind.execute(sa.text("SELECT run_id, row_start FROM run_row_blocks")).all()
    for run_id, row_start in keys:
        text = bind.execute(
            sa.text("SELECT rows FROM run_row_blocks WHERE run_id = :r AND row_start = :s"),
            {"r": run_id, "s": row_start},
        ).scalar_one()
        values = [
            {"run_id": run_id, "row_index": row_start + k, "data": row}
            for k, row in enumerate(json.loads(text))
        ]
        if values:
            bind.execute(rows.insert(), values)
    op.drop_table("run_row_blocks")
