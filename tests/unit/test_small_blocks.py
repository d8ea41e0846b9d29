"""A small result block is checked row by row, a large one with numpy: the same blocks pass,
the same blocks are refused, with the same words (engine/sandbox/blocks.py).

Blocks here are drawn at random, most of them forged somewhere (a status a check may not
report, a score of the wrong kind, a duration that is not real, extras that disagree with
their row), and each is decoded both ways.
"""

from __future__ import annotations

import base64
import random
import struct
from typing import Any

import numpy as np
import pytest

from engine.contract import CHECK_STATUSES, SCORE_KINDS
from engine.sandbox import blocks
from engine.sandbox.blocks import (
    SMALL_BLOCK_ROWS,
    BlockRecord,
    ResultBlock,
    RowExtras,
    decode,
    decode_columns,
    decode_rows,
)

#: A score of each kind as the harness writes it, and what may be forged in its place.
HONEST = {1: [0.0, 1.0], 2: [7.0, -3.0, 0.0, 2.0**53, -(2.0**60)], 3: [0.5, -0.0, 1e300]}
FORGED = [0.5, 2.0, 2.0**53 + 2, 2.0**63, 2.0**64, float("nan"), float("inf"), float("-inf")]
DURATIONS = [0.0, 0.25, 3.5, -0.0]
FORGED_DURATIONS = [-1.0, float("nan"), float("inf")]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def honest_extra(rng: random.Random, ok: bool, kind: int, score: float) -> RowExtras | None:
    fields: dict[str, Any] = {}
    if not ok:
        fields["error"] = "ValueError: boom"
    if rng.random() < 0.3:
        fields["output"] = "hi\n"
    if ok and rng.random() < 0.3:
        fields.update(explanation="because", passed=rng.random() < 0.5, metadata={"sub": 1})
    if ok and kind == 2 and abs(score) > 2**53:
        fields["score"] = int(score)
    return RowExtras(**fields) if fields else None


def forge(rng: random.Random, rows: list[list[Any]], extras: dict[int, RowExtras]) -> None:
    """One thing of one row made wrong (a check can write anything into its block)."""
    k = rng.randrange(len(rows))
    what = rng.randrange(9)
    if what == 0:
        rows[k][0] = rng.choice([len(CHECK_STATUSES), len(CHECK_STATUSES) + 1, 255])
    elif what == 1:
        rows[k][1] = rng.choice([0, len(SCORE_KINDS), 9])
    elif what == 2:
        rows[k][2] = rng.choice(FORGED)
    elif what == 3:
        rows[k][3] = rng.choice(FORGED_DURATIONS)
    elif what == 4:
        extras.pop(k, None)
    elif what == 5:
        extras[k] = RowExtras(error="forged")
    elif what == 6:
        extras[k] = RowExtras(error="forged", passed=True)
    elif what == 7:
        extras[k] = RowExtras(score=rng.choice([7, 2**53 + 2, 2**63 - 1]))
    else:
        rows[k][1] = rng.choice([1, 2, 3])  # a kind for a row that may not be ok


def draw_block(rng: random.Random, n: int) -> BlockRecord:
    """A block of ``n`` rows as the harness writes it, forged in one place half the time."""
    rows: list[list[Any]] = []  # code, kind, score, ms
    extras: dict[int, RowExtras] = {}
    for k in range(n):
        ok = rng.random() < 0.7
        code = 0 if ok else rng.randrange(1, len(CHECK_STATUSES))
        kind = rng.choice(list(HONEST)) if ok else 0
        score = rng.choice(HONEST[kind]) if ok else float("nan")
        rows.append([code, kind, score, rng.choice(DURATIONS)])
        extra = honest_extra(rng, ok, kind, score)
        if extra is not None:
            extras[k] = extra
    if rng.random() < 0.5:
        forge(rng, rows, extras)
    listed = list(extras.items())
    if listed and rng.random() < 0.05:
        listed.append(rng.choice(listed))  # the same row twice
    if rng.random() < 0.05:
        listed.append((rng.choice([-1, n]), RowExtras(error="elsewhere")))
    codes, kinds, scores, ms = (list(column) for column in zip(*rows, strict=True))
    return BlockRecord.model_construct(  # as off the wire, before its validator decodes it
        t="block",
        i=rng.randrange(5),
        n=n,
        codes=b64(bytes(codes)),
        kinds=b64(bytes(kinds)),
        scores=b64(struct.pack(f"<{n}d", *scores)),
        ms=b64(struct.pack(f"<{n}d", *ms)),
        extras=listed,
    )


def outcome(decoder: Any, record: BlockRecord) -> ResultBlock | str:
    try:
        block: ResultBlock = decoder(record)
    except ValueError as exc:
        return f"refused: {exc}"
    return block


def assert_same(rows: ResultBlock | str, columns: ResultBlock | str) -> None:
    if isinstance(columns, str) or isinstance(rows, str):
        assert rows == columns
        return
    assert rows.first == columns.first
    for name in ("statuses", "kinds", "scores", "ms"):
        mine, theirs = getattr(rows, name), getattr(columns, name)
        assert mine.dtype == theirs.dtype, name
        assert np.array_equal(mine, theirs, equal_nan=True), name
        assert mine.flags.writeable, name  # the host changes rows after decoding
    assert rows.extras == columns.extras


@pytest.mark.parametrize("seed", range(40))
def test_row_by_row_and_numpy_agree_on_every_block(seed: int) -> None:
    rng = random.Random(seed)
    refused = 0
    for _ in range(60):
        record = draw_block(rng, rng.randint(1, SMALL_BLOCK_ROWS))
        rows, columns = outcome(decode_rows, record), outcome(decode_columns, record)
        assert_same(rows, columns)
        refused += isinstance(rows, str)
    assert 0 < refused < 60  # both kinds were drawn


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("codes", "***", "block column 'codes' is not base64"),
        ("kinds", b64(b"\0\0"), "block column 'kinds' holds 2 bytes for 1 rows"),
        ("scores", b64(b"\0" * 4), "block column 'scores' holds 4 bytes for 1 rows"),
    ],
)
def test_a_column_of_the_wrong_size_or_encoding_is_refused_alike(
    field: str, value: str, words: str
) -> None:
    record = draw_block(random.Random(1), 1).model_copy(update={field: value})
    assert outcome(decode_rows, record) == outcome(decode_columns, record) == f"refused: {words}"


def test_blocks_take_the_path_of_their_size() -> None:
    small = draw_block(random.Random(3), SMALL_BLOCK_ROWS)
    large = draw_block(random.Random(3), SMALL_BLOCK_ROWS + 1)
    calls: list[str] = []
    real_rows, real_columns = blocks.decode_rows, blocks.decode_columns

    def rows(record: BlockRecord) -> ResultBlock:
        calls.append("rows")
        return real_rows(record)

    def columns(record: BlockRecord) -> ResultBlock:
        calls.append("columns")
        return real_columns(record)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(blocks, "decode_rows", rows)
        patch.setattr(blocks, "decode_columns", columns)
        for record in (small, large):
            outcome(decode, record)
    assert calls == ["rows", "columns"]
