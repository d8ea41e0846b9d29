"""A check's results as numpy columns give the figures and pages the per-row SQL gave:
summaries equal to the in-memory summary of the same results, the histogram's bins, the
(row, check) order of a run's pages, and the run table's filters, sorts and keyset
cursors (ties, no scores, cursors at the edge of a block)."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest

from engine.contract import Status
from engine.models import RowResult
from engine.runs.summary import score_stats as in_memory_stats
from engine.storage import moments
from engine.storage.result_blocks import EMPTY, ResultArrays, concat, decode_block, encode_block
from engine.storage.result_reads import merged_page
from engine.storage.result_stats import score_histogram, score_stats
from engine.web.table import TableFilter, _cursor, _ordered


def _arrays(results: list[RowResult], rows: list[int] | None = None) -> ResultArrays:
    """One block of ``results`` on ``rows`` (default 0, 1, ...), decoded."""
    rows = list(range(len(results))) if rows is None else rows
    extras = {
        k: {
            "explanation": r.explanation,
            "error": r.error,
            "output": r.output,
            "passed": r.passed,
            "metadata": r.metadata,
            "model": r.model,
        }
        for k, r in enumerate(results)
    }
    return decode_block(
        encode_block(
            rows,
            [r.status.value for r in results],
            [r.score for r in results],
            [r.duration_ms for r in results],
            extras,
        )
    )


def _ok(score: Any, passed: bool | None = None) -> RowResult:
    return RowResult(status=Status.OK, score=score, passed=passed)


STATS_CASES = [
    pytest.param([], id="empty"),
    pytest.param([RowResult(status=Status.ERROR, error="x")] * 3, id="errors-only"),
    pytest.param([_ok(None), _ok(None), RowResult(status=Status.TIMEOUT)], id="all-none-scores"),
    pytest.param([_ok(True), _ok(False), _ok(True), _ok(None)], id="bools"),
    pytest.param([_ok(0.5, True), _ok(0.25, False), _ok(1.0), _ok(0.5, True)], id="flags-ties"),
    pytest.param([_ok(1.7e308), _ok(1.7e308), _ok(-3.0)], id="huge"),
    pytest.param([_ok(2**60 + 1), _ok(3), _ok(0.1), _ok(0.2)], id="big-int-even"),
    pytest.param([_ok(7), _ok(-2), _ok(0), _ok(12.0), _ok(-0.0)], id="whole-numbers"),
    pytest.param([_ok(2**52), _ok(2**52 - 1), _ok(-3), _ok(1)], id="whole-past-2**53-in-all"),
    pytest.param(
        [RowResult(status=Status.INVALID_SCORE, score=None)] + [_ok(i / 7) for i in range(9)],
        id="odd-count",
    ),
]


@pytest.mark.parametrize("results", STATS_CASES)
def test_score_stats_of_columns_equal_the_in_memory_summary(results: list[RowResult]) -> None:
    assert score_stats(_arrays(results)) == in_memory_stats(results)


@pytest.mark.parametrize("seed", range(20))
def test_the_mean_of_whole_numbers_is_the_exact_one(seed: int) -> None:
    """Whole numbers are summed by numpy below 2**53 in all, by fsum from there: either way
    the mean the in-memory summary gives."""
    rng = random.Random(seed)
    top = rng.choice([1, 100, 2**20, 2**45, 2**51])
    scores = [float(rng.randint(-top, top)) for _ in range(rng.randint(1, 400))]
    arrays = _arrays([_ok(v) for v in scores])
    assert score_stats(arrays).mean == moments.mean(scores)


def test_score_stats_of_several_blocks_count_every_block_once() -> None:
    first = _arrays([_ok(0.5, True), RowResult(status=Status.ERROR)], [0, 1])
    second = _arrays([_ok(1.0, False), _ok(0.0, True)], [2, 3])
    stats = score_stats(concat([first, second]))
    assert stats.counts == {"error": 1, "ok": 3}
    assert (stats.ok_count, stats.mean, stats.p50) == (3, 0.5, 0.5)
    assert (stats.flagged, stats.passes, stats.bool_scores) == (3, 2, 0)


def test_score_stats_of_no_results() -> None:
    stats = score_stats(EMPTY)
    assert stats.counts == {} and stats.ok_count == 0
    assert (stats.mean, stats.min, stats.max, stats.p50) == (None, None, None, None)


def test_histogram_bins_as_the_database_did() -> None:
    eighths = [_ok(i / 8) for i in range(9)]  # exact in binary: no rounding at an edge
    arrays = _arrays([*eighths, _ok(None), RowResult(status=Status.ERROR)])
    bins = score_histogram(arrays, bins=4)
    assert bins == [(0.0, 2), (0.25, 2), (0.5, 2), (0.75, 3)]  # the top in the last bin
    assert score_histogram(_arrays([_ok(3), _ok(3)])) == [(3.0, 2)]
    assert score_histogram(_arrays([_ok(None)])) == []
    assert score_histogram(EMPTY) == []


def test_histogram_of_scores_near_the_largest_float_stays_finite() -> None:
    top = 1.7e308
    bins = score_histogram(_arrays([_ok(-top), _ok(top), _ok(0.0)]), bins=4)
    assert [n for _, n in bins] == [1, 0, 1, 1]
    assert all(math.isfinite(edge) for edge, _ in bins)
    assert bins[0][0] == -top


def _brute_page(rows: dict[int, list[int]], offset: int, limit: int) -> list[tuple[int, int]]:
    every = sorted((r, c, k) for c, found in rows.items() for k, r in enumerate(found))
    return [(c, k) for _, c, k in every[offset : offset + limit]]


@pytest.mark.parametrize("seed", range(12))
def test_a_runs_page_is_the_slice_of_every_result_ordered_by_row_then_check(seed: int) -> None:
    rng = random.Random(seed)
    checks = rng.randint(1, 4)
    rows = {
        c: sorted(rng.sample(range(60), rng.randint(0, 60))) for c in range(checks)
    }  # missing rows: a run still going
    arrays = {c: np.asarray(found, np.int64) for c, found in rows.items()}
    total = sum(len(found) for found in rows.values())
    for offset in {0, 1, total // 3, total - 1, total, total + 5}:
        for limit in (1, 3, 7, 1000):
            assert merged_page(arrays, offset, limit) == _brute_page(rows, offset, limit), (
                offset,
                limit,
            )


def test_a_runs_page_of_no_results_is_empty() -> None:
    assert merged_page({}, 0, 10) == []
    assert merged_page({0: np.empty(0, np.int64)}, 0, 10) == []
    assert merged_page({0: np.arange(3, dtype=np.int64)}, 0, 0) == []


def _scores_run() -> ResultArrays:
    """Three blocks of 4 rows: ties across block edges, a row with no score, an error."""
    scores: list[Any] = [0.5, 0.5, None, 1.0, 0.5, 0.0, 1.0, 0.5, 0.25, 0.5, 0.0, 0.5]
    blocks = []
    for start in range(0, 12, 4):
        part = [
            RowResult(status=Status.ERROR, error="boom") if i == 9 else _ok(scores[i])
            for i in range(start, start + 4)
        ]
        blocks.append(_arrays(part, list(range(start, start + 4))))
    return concat(blocks)


def _walk(arrays: ResultArrays, f: TableFilter, page: int) -> list[int]:
    """Every row of the table, ``page`` rows a page, following the keyset cursor."""
    seen: list[int] = []
    cursor: str | None = None
    for _ in range(10_000):
        at = _ordered(arrays, f, cursor, page + 1).tolist()
        seen += [int(arrays.row_index[k]) for k in at[:page]]
        if len(at) <= page:
            return seen
        cursor = _cursor(f, arrays, at[page - 1])
    raise AssertionError("the cursor never reached the end")


@pytest.mark.parametrize("page", [1, 2, 3, 4, 5, 100])
def test_keyset_pages_in_each_sort_cover_every_row_once_ties_by_row(page: int) -> None:
    arrays = _scores_run()
    assert _walk(arrays, TableFilter(sort="row"), page) == list(range(12))
    # rows 2 and 9 have no score: the score sorts leave them out, ties go by row
    assert _walk(arrays, TableFilter(sort="score_asc"), page) == [5, 10, 8, 0, 1, 4, 7, 11, 3, 6]
    assert _walk(arrays, TableFilter(sort="score_desc"), page) == [3, 6, 0, 1, 4, 7, 11, 8, 5, 10]


def test_filters_by_status_and_score_range() -> None:
    arrays = _scores_run()
    assert _walk(arrays, TableFilter(status="error"), 2) == [9]
    assert _walk(arrays, TableFilter(status="timeout"), 2) == []  # no row has it
    assert _walk(arrays, TableFilter(min_score=0.5, max_score=0.5), 2) == [0, 1, 4, 7, 11]
    assert _walk(arrays, TableFilter(max_score=0.25, sort="score_desc"), 2) == [8, 5, 10]
    assert _walk(arrays, TableFilter(status="ok", min_score=0.9), 2) == [3, 6]


def test_a_cursor_is_a_plain_float_and_row() -> None:
    arrays = _scores_run()
    assert _cursor(TableFilter(sort="score_asc"), arrays, 8) == "0.25:8"
    assert _cursor(TableFilter(sort="row"), arrays, 8) == "8"
    with pytest.raises(ValueError):
        _ordered(arrays, TableFilter(sort="score_asc"), "nonsense", 3)


def test_a_run_with_no_results_has_an_empty_table() -> None:
    for sort in ("row", "score_asc", "score_desc"):
        assert _ordered(EMPTY, TableFilter(sort=sort, status="ok"), None, 10).tolist() == []


def test_the_cache_drops_the_least_recently_used_past_its_size() -> None:
    from engine.storage.result_reads import _Cache, _size

    three = _arrays([_ok(0.5)] * 3)
    cache: _Cache[tuple[str, int, int], ResultArrays] = _Cache(2 * _size(three), _size)
    cache.put(("a", 0, 3), three)
    cache.put(("b", 0, 3), three)
    assert cache.get(("a", 0, 3)) is three  # now the most recently used
    cache.put(("c", 0, 3), three)
    assert cache.get(("b", 0, 3)) is None
    assert cache.get(("a", 0, 3)) is three and cache.get(("c", 0, 3)) is three
    cache.put(("big", 0, 9), _arrays([_ok(0.5)] * 9))  # larger than the whole cache: not kept
    assert cache.get(("big", 0, 9)) is None and cache.get(("c", 0, 3)) is three


def _brute_table(arrays: ResultArrays, f: TableFilter) -> list[int]:
    """The table's rows as the SQL ordered them: the filter, then (score, row) or row."""
    rows: list[tuple[float, int]] = []
    for k in range(len(arrays)):
        score, row = float(arrays.score[k]), int(arrays.row_index[k])
        has = not math.isnan(score)
        if f.status and arrays.status_at(k) != f.status:
            continue
        if f.min_score is not None and not (has and score >= f.min_score):
            continue
        if f.max_score is not None and not (has and score <= f.max_score):
            continue
        if f.sort != "row" and not has:
            continue
        rows.append((score if f.sort != "score_desc" else -score, row))
    if f.sort == "row":
        return sorted(row for _, row in rows)
    return [row for _, row in sorted(rows)]


@pytest.mark.parametrize("seed", range(8))
def test_keyset_pages_equal_the_sorted_filtered_rows(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 300)
    results = [
        RowResult(status=Status.ERROR)
        if rng.random() < 0.1
        else _ok(rng.choice([None, rng.randint(0, 4) / 4, rng.random()]))
        for _ in range(n)
    ]
    rows = sorted(rng.sample(range(n * 3), n))  # not contiguous: a run with gaps
    blocks = [_arrays(results[i : i + 37], rows[i : i + 37]) for i in range(0, n, 37)]
    arrays = concat(blocks)
    for sort in ("row", "score_asc", "score_desc"):
        for f in (
            TableFilter(sort=sort),
            TableFilter(sort=sort, status="ok", min_score=0.25),
            TableFilter(sort=sort, max_score=0.5),
            TableFilter(sort=sort, status="error"),
        ):
            assert _walk(arrays, f, rng.randint(1, 40)) == _brute_table(arrays, f), f
