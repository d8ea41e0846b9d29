"""The row and compare pages on awkward data: a 25,000-character output wraps and is
collapsed, empty and absent fields are told apart, floats are rounded, the serving model
is shown, and a chart's legend never covers its bar labels."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import Dashboard, _finished
from tests.browser.test_dashboard import sign_in
from tests.fake_llm import MODEL

pytestmark = [pytest.mark.docker, pytest.mark.slow]

#: Asks the model (through the sandbox's gateway) on "ask" rows; floats no page should
#: print whole: 0.7926000000000001 and 0.1 + 0.2.
READER = """
from openai import OpenAI

def evaluate(model_output: str) -> float:
    if model_output.startswith("ask"):
        OpenAI().chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": model_output}]
        )
        return 0.7926000000000001
    return 0.1 + 0.2
"""
#: Every row passes: its pass bar reaches the top of the chart, right under the legend.
ALWAYS = "def evaluate(model_output: str) -> bool:\n    return True\n"
LONG = "x" * 25_000  # one line, no space to break at


@dataclass
class Awkward:
    run_a: str
    run_b: str


@pytest.fixture(scope="module")
def awkward(dashboard: Dashboard) -> Iterator[Awkward]:
    runs = []
    with dashboard.v1() as client:
        pushed = client.post("/v1/checks", json={"name": "reader", "source": READER})
        assert pushed.status_code in (200, 201), pushed.text
        pushed = client.post("/v1/checks", json={"name": "always", "source": ALWAYS})
        assert pushed.status_code in (200, 201), pushed.text
        for second in (False, True):
            rows: list[dict[str, Any]] = [
                {"id": "long", "model_output": LONG, "scenario_input": ""},
                {
                    "id": "asks",
                    "model_output": "plain" if second else "ask me",
                    "scenario_input": "q",
                },
            ]
            if not second:
                dashboard.llm.reply("yes")
            started = client.post("/v1/runs", json={"checks": ["reader", "always"], "rows": rows})
            assert started.status_code == 202, started.text
            run = _finished(client, started.json()["id"])
            assert run["status"] == "succeeded", run
            runs.append(run["id"])
    yield Awkward(*runs)


def _overflows(page: Any) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth > window.innerWidth + 1"))


def test_a_long_output_wraps_and_is_collapsed_and_empty_is_not_absent(
    page: Any, dashboard: Dashboard, awkward: Awkward, screenshots: Path
) -> None:
    from playwright.sync_api import expect

    sign_in(page, dashboard, path=f"/ui/runs/{awkward.run_a}/rows/0")
    expect(page.get_by_role("heading", name="Row 0 (long)")).to_be_visible()
    output = page.get_by_label("model_output", exact=True)
    expect(output.get_by_text("show all 25,000 characters")).to_be_visible()
    assert _overflows(page) is False  # the line wraps inside the page
    preview = output.locator("pre.preview")
    assert len(preview.inner_text()) < 5000
    expect(page.get_by_label("scenario_input", exact=True)).to_have_text("(empty)")
    expect(page.get_by_label("scenario_result", exact=True)).to_have_text("(not set)")
    result = page.get_by_role("region", name="result of reader")
    expect(result.locator(".score")).to_have_text("0.3")
    assert "0.30000000000000004" not in page.content()
    page.screenshot(path=str(screenshots / "dashboard-row-long.png"), full_page=False)
    output.get_by_text("show all 25,000 characters").click()
    full = output.locator("details pre")
    expect(full).to_be_visible()
    assert len(full.inner_text()) == 25_000
    expect(preview).to_be_hidden()
    assert _overflows(page) is False
    box = full.bounding_box()
    assert box is not None and box["width"] <= 1280 and box["height"] > 200


def test_the_row_page_shows_the_model_that_served_the_row(
    page: Any, dashboard: Dashboard, awkward: Awkward
) -> None:
    from playwright.sync_api import expect

    sign_in(page, dashboard, path=f"/ui/runs/{awkward.run_a}/rows/1")
    result = page.get_by_role("region", name="result of reader")
    expect(result.locator(".served-by")).to_have_text(MODEL)
    expect(result.locator(".score")).to_have_text("0.7926")
    with dashboard.v1() as client:
        stored = client.get(f"/v1/runs/{awkward.run_a}/results").json()["results"]
    reader = [r for r in stored if r["check"] == "reader"]
    assert [r["model"] for r in reader] == [None, MODEL]  # the run's results keep it
    assert reader[1]["score"] == 0.7926000000000001  # full precision off the page


def test_compare_rounds_its_numbers_and_keeps_legends_off_the_labels(
    page: Any, dashboard: Dashboard, awkward: Awkward, screenshots: Path
) -> None:
    from playwright.sync_api import expect

    sign_in(page, dashboard, path=f"/ui/compare?a={awkward.run_a}&b={awkward.run_b}")
    changed = page.get_by_role("table", name="changed rows of reader")
    row = changed.get_by_role("row").filter(has_text="asks")
    expect(row).to_contain_text("0.7926")
    expect(row).to_contain_text("0.3")
    main = page.locator("main").inner_text()
    assert "0.7926000000000001" not in main and "0.30000000000000004" not in main

    overlay = page.get_by_role("img", name="pass and fail of always, A and B")
    expect(overlay).to_be_visible()
    charts = page.locator("main svg.chart")
    expect(charts.first).to_be_visible()
    checked = 0
    for i in range(charts.count()):
        chart = charts.nth(i)
        legends = [
            chart.locator("text.legend").nth(k) for k in range(chart.locator("text.legend").count())
        ]
        labels = [
            chart.locator("text.bar-label").nth(k)
            for k in range(chart.locator("text.bar-label").count())
        ]
        for legend in legends:
            a = legend.bounding_box()
            for label in labels:
                b = label.bounding_box()
                assert a and b
                apart = (
                    a["x"] + a["width"] <= b["x"]
                    or b["x"] + b["width"] <= a["x"]
                    or a["y"] + a["height"] <= b["y"]
                    or b["y"] + b["height"] <= a["y"]
                )
                assert apart, (legend.text_content(), label.text_content(), a, b)
                checked += 1
    assert checked > 0  # the pass/fail overlay has both a legend and labels
    page.screenshot(path=str(screenshots / "dashboard-compare-charts.png"), full_page=True)


def test_compare_colours_a_significant_change_by_its_direction(
    page: Any, dashboard: Dashboard
) -> None:
    from playwright.sync_api import expect

    sign_in(page, dashboard, path=f"/ui/compare?a={dashboard.run_a}&b={dashboard.run_b}")
    deltas = page.get_by_role("table", name="deltas").get_by_role("row")
    drop = deltas.filter(has_text="long_enough").locator("strong.sig").first
    expect(drop).to_have_class("sig down")
    expect(drop).to_have_css("color", "rgb(155, 44, 44)")
    page.goto(f"{dashboard.url}/ui/compare?a={dashboard.run_b}&b={dashboard.run_a}")
    rise = deltas.filter(has_text="long_enough").locator("strong.sig").first
    expect(rise).to_have_class("sig up")
    expect(rise).to_have_css("color", "rgb(34, 84, 61)")
