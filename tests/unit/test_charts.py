"""The dashboard's SVG charts: axes with counts, bin edges on hover, counts and shares."""

from __future__ import annotations

import re
from xml.etree import ElementTree

import pytest

from engine.web import charts

SVG = "{http://www.w3.org/2000/svg}"


def _parse(svg: str) -> ElementTree.Element:
    return ElementTree.fromstring(svg)  # well-formed XML, or this raises


def _texts(svg: str, cls: str) -> list[str]:
    return [t.text or "" for t in _parse(svg).iter(f"{SVG}text") if t.get("class") == cls]


def _bar_titles(svg: str) -> list[str]:
    """The hover text of each bar (the legend's swatches have none)."""
    titles = [r.findtext(f"{SVG}title") for r in _parse(svg).iter(f"{SVG}rect")]
    return [t for t in titles if t]


@pytest.mark.parametrize(
    ("top", "ticks"),
    [
        (0, [0, 1]),
        (1, [0, 1]),
        (3, [0, 1, 2, 3]),
        (7, [0, 2, 4, 6, 8]),
        (45, [0, 20, 40, 60]),
        (60, [0, 20, 40, 60]),
        (1000, [0, 500, 1000]),
    ],
)
def test_nice_ticks(top: int, ticks: list[int]) -> None:
    assert charts.nice_ticks(top) == ticks


def test_histogram_has_a_count_axis_and_each_bins_edges_on_hover() -> None:
    bins = [(0.0 + i * 0.5, n) for i, n in enumerate([3, 0, 7, 1])]
    svg = charts.histogram_svg("length", bins, 2.0)
    assert _parse(svg).get("aria-label") == "score distribution of length"
    assert _bar_titles(svg) == [
        "scores [0, 0.5): 3 rows",
        "scores [0.5, 1): 0 rows",
        "scores [1, 1.5): 7 rows",
        "scores [1.5, 2]: 1 row",
    ]
    assert _texts(svg, "tick-y") == ["0", "2", "4", "6", "8"]
    assert _texts(svg, "tick-x") == ["0", "0.5", "1", "1.5", "2"]


def test_histogram_of_one_value() -> None:
    svg = charts.histogram_svg("same", [(4.0, 60)], 4.0)
    assert _bar_titles(svg) == ["score 4: 60 rows"]
    assert _texts(svg, "tick-x") == ["4"]


def test_histogram_of_a_check_with_no_ok_score() -> None:
    """Every row erred: no bins, no max; the run page still draws (it once answered 500)."""
    assert charts.bin_edges([], None) == []
    svg = charts.histogram_svg("all-errors", [], None)
    assert svg.startswith("<svg") and svg.endswith("</svg>")


def test_pass_fail_bars_carry_counts_and_percentages() -> None:
    svg = charts.pass_fail_svg("long_enough", 45, 15)
    assert _texts(svg, "bar-label") == ["45 (75.0%)", "15 (25.0%)"]
    assert _texts(svg, "tick-x") == ["pass", "fail"]
    assert _bar_titles(svg) == [
        "pass: 45 of 60 ok rows (75.0%)",
        "fail: 15 of 60 ok rows (25.0%)",
    ]


def test_statuses_are_a_chart_of_their_own() -> None:
    svg = charts.status_svg("long_enough", {"error": 6, "ok": 24})
    assert _parse(svg).get("aria-label") == "statuses of long_enough"
    assert _texts(svg, "tick-x") == ["ok", "error"]
    assert _texts(svg, "bar-label") == ["24", "6"]
    assert "error: 6 of 30 results (20.0%)" in _bar_titles(svg)


def test_compare_overlays_both_runs() -> None:
    a = charts.RunScores("A", 20, 24, [], None)
    b = charts.RunScores("B", 14, 24, [], None)
    svg = charts.compare_svg("long_enough", a, b)
    assert _bar_titles(svg) == [
        "A pass: 20 of 24 ok rows (83.3%)",
        "A fail: 4 of 24 ok rows (16.7%)",
        "B pass: 14 of 24 ok rows (58.3%)",
        "B fail: 10 of 24 ok rows (41.7%)",
    ]
    a = charts.RunScores("A", None, 4, [(0.0, 1), (1.0, 3)], 2.0)
    b = charts.RunScores("B", None, 4, [(1.0, 2), (2.0, 2)], 3.0)
    svg = charts.compare_svg("length", a, b)
    titles = _bar_titles(svg)
    assert titles[0] == "A scores [0, 1): 1 row" and titles[-1] == "B scores [2, 3]: 2 rows"
    assert _texts(svg, "tick-x") == ["0", "0.75", "1.5", "2.25", "3"]
    assert re.search(r">A \(4 ok\)<", svg) and re.search(r">B \(4 ok\)<", svg)
