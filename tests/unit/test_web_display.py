"""What the dashboard shows: rounded numbers; empty, absent and long text; legends apart."""

from __future__ import annotations

import re

from engine.web import charts
from engine.web.display import COLLAPSE_CHARS, number, shown


def test_numbers_are_rounded_for_display() -> None:
    assert number(0.7926000000000001) == "0.7926"
    assert number(1 / 3) == "0.3333"
    assert number(True) == "true"
    assert number(7) == "7"
    assert number(None) == "\u2013"


def test_empty_absent_and_long_text_are_told_apart() -> None:
    assert shown(None).state == "absent"
    assert shown("x", present=False).state == "absent"
    assert shown("").state == "empty"
    assert shown("hi").state == "short"
    assert shown({"a": 1}).text == '{\n  "a": 1\n}'
    long = shown("y" * 25_000)
    assert (long.state, long.length, len(long.head)) == ("long", 25_000, COLLAPSE_CHARS)


def test_a_legend_sits_above_the_tallest_bars_label() -> None:
    a = charts.RunScores("A", 24, 24, [], None)  # every row passes: the tallest bar
    b = charts.RunScores("B", 24, 24, [], None)
    svg = charts.compare_svg("c", a, b)
    legend_bottom = max(
        float(y) + 3 for y in re.findall(r'<text x="[\d.]+" y="([\d.]+)"[^>]*class="legend"', svg)
    )
    label_tops = [
        float(y) - 10 for y in re.findall(r'<text [^>]*y="([\d.]+)"[^>]*class="bar-label"', svg)
    ]
    assert label_tops and min(label_tops) > legend_bottom
