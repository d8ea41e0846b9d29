"""The online scorer's pure steps: a run's row result as a span score, and a backfill page's
picks cut at its row cap (spans without content cost no row)."""

from __future__ import annotations

from typing import Any

import pytest

from engine.online.backfill import _within_room
from engine.online.filters import SpanFields
from engine.online.linking import result_of
from engine.storage.rule_records import SpanRef, SpanView


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        # a bool check's True is 1.0 with passed set from it
        (("ok", True, None, "fine", None), ("scored", 1.0, True, "fine")),
        (("ok", False, None, None, None), ("scored", 0.0, False, None)),
        # a pass flag the check set itself wins over the bool
        (("ok", True, False, None, None), ("scored", 1.0, False, None)),
        (("ok", 3, None, None, None), ("scored", 3.0, None, None)),
        (("ok", 0.25, True, "x", None), ("scored", 0.25, True, "x")),
        # a score that is no number (a label) keeps the status, not a value
        (("ok", "label", None, None, None), ("scored", None, None, None)),
        # any other status is an error naming the status and the reason
        (
            ("timeout", None, None, None, "row took 2 s"),
            ("error", None, None, "timeout: row took 2 s"),
        ),
        (("error", 1.0, True, "half", None), ("error", None, None, "error: half")),
        (("sandbox_error", None, None, None, None), ("error", None, None, "sandbox_error: ")),
    ],
)
def test_a_row_result_as_a_span_score(row: tuple[Any, ...], expected: tuple[Any, ...]) -> None:
    assert result_of(*row) == expected


def _view(span_id: str, no_content: bool) -> SpanView:
    fields = SpanFields("llm", None, None, "ok", 0, {}, {})
    return SpanView(SpanRef("t" * 32, span_id, 0, no_content), fields)


@pytest.mark.parametrize(
    ("contents", "room", "kept"),
    [
        ([True, True, True], 2, 2),
        ([True, True, True], 0, 0),
        # spans without content are kept between, and before the cut, at no cost
        ([False, True, False, True, True], 2, 4),
        ([True, False, False], 1, 3),
        ([False, False], 0, 2),
    ],
)
def test_a_backfill_page_is_cut_at_its_row_cap(contents: list[bool], room: int, kept: int) -> None:
    picks = [_view(f"s{i}", not has) for i, has in enumerate(contents)]
    got = _within_room(picks, room)
    assert got == picks[:kept]
    assert sum(not v.ref.no_content for v in got) <= room
