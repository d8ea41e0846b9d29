"""run result blocks: a run's results stored a block of results at a time

``row_results`` (one result a database row, with its primary key and the two browse
indexes of 0005) becomes ``run_result_blocks``: up to :data:`ROWS_PER_BLOCK` results of
one check of a run a database row, as columns (``engine/storage/result_blocks.py``).
Each (run, check)'s results move in row order, a block holding the next results stored
whether or not their row indices follow one another (``rows`` counts them;
``row_start`` and ``row_stop`` bound them, at most :data:`MAX_SPAN` rows apart). They are
read :data:`READ` at a time on the primary key, so a large table is never loaded at once.
Runs, their counts and stored summaries are unchanged; SQLite's ``row_results.score``, a
JSON column of numeric affinity, held a whole float score (``3.0``) as the integer 3 and
read it back so: it moves as it reads. Going down makes the results one a database row
again, in the table and indexes 0019 left.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterator
from typing import Any

import numpy as np
import sqlalchemy as sa
from alembic import op

# The codec's decoder, not a frozen copy: going down must read every block the code in
# place may have written, and the format carries its version (a later format must keep
# decoding format 1). Going up writes format 1 itself (_encode_block).
from engine.storage.result_blocks import decode_block

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

#: Results a block at most.
ROWS_PER_BLOCK = 1000
#: A block's ``row_stop - row_start`` at most: writers read only the blocks starting
#: this close before their rows (``engine/storage/result_ranges.py``'s ``MAX_SPAN``).
MAX_SPAN = 5000
#: Results read a statement when moving a check's results.
READ = 10_000
#: Blocks inserted a statement at most.
BLOCKS_PER_STATEMENT = 20
#: Results inserted a statement at most going down.
ROWS_PER_INSERT = 1000

#: ``row_results`` as 0019 left it, typed so that its JSON and boolean columns read back
#: as Python values on either database.
_RESULTS = sa.table(
    "row_results",
    sa.column("run_id", sa.String),
    sa.column("check_index", sa.Integer),
    sa.column("row_index", sa.Integer),
    sa.column("status", sa.String),
    sa.column("score", sa.JSON),
    sa.column("score_num", sa.Float),
    sa.column("explanation", sa.Text),
    sa.column("error", sa.Text),
    sa.column("output", sa.Text),
    sa.column("duration_ms", sa.Float),
    sa.column("passed", sa.Boolean),
    sa.column("result_metadata", sa.JSON),
    sa.column("model", sa.String),
)
_BLOCKS = sa.table(
    "run_result_blocks",
    sa.column("run_id", sa.String),
    sa.column("check_index", sa.Integer),
    sa.column("row_start", sa.Integer),
    sa.column("row_stop", sa.Integer),
    sa.column("rows", sa.Integer),
    sa.column("data", sa.LargeBinary),
)
#: A result's optional parts: its ``row_results`` column and its name in a block's extras.
_EXTRAS = (
    ("explanation", "explanation"),
    ("error", "error"),
    ("output", "output"),
    ("passed", "passed"),
    ("result_metadata", "metadata"),
    ("model", "model"),
)


def upgrade() -> None:
    op.create_table(
        "run_result_blocks",
        sa.Column("run_id", sa.String(40), nullable=False),
        sa.Column("check_index", sa.Integer(), nullable=False),
        sa.Column("row_start", sa.Integer(), nullable=False),
        sa.Column("row_stop", sa.Integer(), nullable=False),
        sa.Column("rows", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name="fk_run_result_blocks_run_id_runs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "check_index", "row_start", name="pk_run_result_blocks"),
    )
    bind = op.get_bind()
    checks = bind.execute(
        sa.text("SELECT DISTINCT run_id, check_index FROM row_results ORDER BY run_id, check_index")
    ).all()
    for run_id, check_index in checks:
        pending: list[dict[str, Any]] = []
        for block in _blocks(bind, run_id, check_index):
            pending.append(block)
            if len(pending) >= BLOCKS_PER_STATEMENT:
                bind.execute(_BLOCKS.insert(), pending)
                pending = []
        if pending:
            bind.execute(_BLOCKS.insert(), pending)
    # its two browse indexes go with it
    op.drop_table("row_results")


def _blocks(bind: Any, run_id: str, check_index: int) -> Iterator[dict[str, Any]]:
    """A check's stored results as blocks of :data:`ROWS_PER_BLOCK`, read in row order
    :data:`READ` at a time on the primary key."""
    columns = [_RESULTS.c.row_index, _RESULTS.c.status, _RESULTS.c.score, _RESULTS.c.duration_ms]
    columns += [_RESULTS.c[name] for name, _ in _EXTRAS]
    block: list[Any] = []
    after = -1
    while True:
        found = bind.execute(
            sa.select(*columns)
            .where(
                _RESULTS.c.run_id == run_id,
                _RESULTS.c.check_index == check_index,
                _RESULTS.c.row_index > after,
            )
            .order_by(_RESULTS.c.row_index)
            .limit(READ)
        ).all()
        for result in found:
            if block and result[0] - block[0][0] >= MAX_SPAN:
                yield _block(run_id, check_index, block)
                block = []
            block.append(result)
            if len(block) >= ROWS_PER_BLOCK:
                yield _block(run_id, check_index, block)
                block = []
        if len(found) < READ:
            break
        after = found[-1][0]
    if block:
        yield _block(run_id, check_index, block)


def _block(run_id: str, check_index: int, results: list[Any]) -> dict[str, Any]:
    """One block's values from its results (``row_results`` rows in row order)."""
    extras: dict[int, dict[str, Any]] = {}
    for k, result in enumerate(results):
        given = {
            name: value
            for (_, name), value in zip(_EXTRAS, result[4:], strict=True)
            if value is not None
        }
        if given:
            extras[k] = given
    data = _encode_block(
        [r[0] for r in results],
        [r[1] for r in results],
        [r[2] for r in results],
        [r[3] for r in results],
        extras,
    )
    return {
        "run_id": run_id,
        "check_index": check_index,
        "row_start": results[0][0],
        "row_stop": results[-1][0] + 1,
        "rows": len(results),
        "data": data,
    }


def _encode_block(
    row_index: list[int],
    status: list[str],
    score: list[bool | int | float | None],
    duration_ms: list[float],
    extras: dict[int, dict[str, Any]],
) -> bytes:
    """Format 1 of ``engine/storage/result_blocks.py``, frozen here so that this migration
    writes what it wrote when it was made, whatever the codec becomes (a later format must
    keep decoding format 1). ``row_index`` ascends; ``extras`` hold stored values (NUL-free
    texts, models of at most 200 characters), only those not None."""
    n = len(row_index)
    names: dict[str, int] = {}
    codes = bytes(names.setdefault(name, len(names)) for name in status)
    kinds = bytearray(n)
    values = np.full(n, math.nan, np.float64)
    kept: dict[str, dict[str, Any]] = {str(k): dict(v) for k, v in extras.items()}
    for k, value in enumerate(score):
        if value is True or value is False:
            kinds[k], values[k] = 1, float(value)
        elif isinstance(value, int):
            kinds[k], values[k] = 2, float(value)
            if abs(value) > 2**53:  # past what a float64 holds: kept exact in the header
                kept.setdefault(str(k), {})["score"] = value
        elif value is not None:
            kinds[k], values[k] = 3, float(value)
    header: dict[str, Any] = {"n": n, "statuses": list(names)}
    contiguous = row_index[-1] - row_index[0] == n - 1
    if contiguous:
        header["start"] = row_index[0]
    if kept:
        header["extras"] = kept
    head = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    pad = -(8 + len(head)) % 8
    return b"".join(
        [
            struct.pack("<3sBI", b"SRB", 1, len(head) + pad),
            head,
            b" " * pad,
            values.tobytes(),
            np.asarray(duration_ms, dtype=np.float64).tobytes(),
            b"" if contiguous else np.asarray(row_index, dtype=np.int64).tobytes(),
            codes,
            bytes(kinds),
        ]
    )


def downgrade() -> None:
    op.create_table(
        "row_results",
        sa.Column("run_id", sa.String(length=40), nullable=False),
        sa.Column("check_index", sa.Integer(), nullable=False),
        sa.Column("row_index", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("score", sa.JSON(), nullable=True),
        sa.Column("score_num", sa.Float(), nullable=True),
        sa.Column("explanation", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("output", sa.Text(), nullable=True),
        sa.Column("duration_ms", sa.Float(), nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=True),
        sa.Column("result_metadata", sa.JSON(), nullable=True),
        sa.Column("model", sa.String(200), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name="fk_row_results_run_id_runs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "check_index", "row_index", name="pk_row_results"),
    )
    bind = op.get_bind()
    keys = bind.execute(
        sa.text(
            "SELECT run_id, check_index, row_start FROM run_result_blocks "
            "ORDER BY run_id, check_index, row_start"
        )
    ).all()
    pending: list[dict[str, Any]] = []
    for run_id, check_index, row_start in keys:
        data = bind.execute(
            sa.select(_BLOCKS.c.data).where(
                _BLOCKS.c.run_id == run_id,
                _BLOCKS.c.check_index == check_index,
                _BLOCKS.c.row_start == row_start,
            )
        ).scalar_one()
        pending += _results(run_id, check_index, bytes(data))
        if len(pending) >= ROWS_PER_INSERT:
            bind.execute(_RESULTS.insert(), pending)
            pending = []
    if pending:
        bind.execute(_RESULTS.insert(), pending)
    # made after the rows are in: one sort each rather than an insert a row
    op.create_index(
        "ix_row_results_run_check_status_row",
        "row_results",
        ["run_id", "check_index", "status", "row_index"],
    )
    op.create_index(
        "ix_row_results_run_check_score_row",
        "row_results",
        ["run_id", "check_index", "score_num", "row_index"],
    )
    op.drop_table("run_result_blocks")


def _results(run_id: str, check_index: int, data: bytes) -> list[dict[str, Any]]:
    """A block's results as ``row_results`` rows, their values as the old writer stored them."""
    arrays = decode_block(data)
    out: list[dict[str, Any]] = []
    for k in range(len(arrays)):
        score = arrays.score_at(k)
        extras = arrays.extras.get(k, {})
        out.append(
            {
                "run_id": run_id,
                "check_index": check_index,
                "row_index": int(arrays.row_index[k]),
                "status": arrays.status_at(k),
                "score": score,
                "score_num": None if score is None else float(score),
                "duration_ms": float(arrays.duration_ms[k]),
                **{column: extras.get(name) for column, name in _EXTRAS},
            }
        )
    return out
