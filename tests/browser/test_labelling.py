"""The annotation queue and the agreement page in chromium: label 10 rows with the
keyboard (y / n), then the agreement page shows the matching confusion matrix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import Dashboard
from tests.browser.test_dashboard import sign_in

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_label_ten_rows_with_the_keyboard_then_see_the_confusion_matrix(
    page: Any, dashboard: Dashboard, screenshots: Path
) -> None:
    from playwright.sync_api import expect

    with dashboard.v1() as v1:
        declared = v1.put("/v1/label-names/long_enough_h", json={"type": "bool"})
        assert declared.status_code in (200, 201), declared.text
        results = v1.get(
            f"/v1/runs/{dashboard.run_a}/results", params={"check": "long_enough", "limit": 100}
        ).json()["results"]
    scores = {r["row_index"]: r["score"] if r["status"] == "ok" else None for r in results}
    query = f"run={dashboard.run_a}&check=long_enough@1&labels=long_enough_h&annotator=kb"
    sign_in(page, dashboard, path=f"/ui/queue?{query}")
    given: dict[int, bool] = {}
    for _ in range(10):
        item = page.locator("section.item")
        expect(item).to_be_visible()
        # the check's score is not on the page before the row is labelled
        expect(page.locator("#previous")).to_have_count(0 if not given else 1)
        row = int(item.get_attribute("data-row"))
        verdict = row % 3 != 0  # people pass the rows whose index is not a multiple of 3
        page.keyboard.press("y" if verdict else "n")
        expect(page.locator("#previous")).to_contain_text(f"Row {row}: you said")
        given[row] = verdict
    assert len(given) == 10
    expect(page.locator('[data-annotator="kb"]')).to_have_text("kb: 10")
    page.screenshot(path=str(screenshots / "annotation-queue.png"))

    page.goto(f"{dashboard.url}/ui/agreement?check=long_enough@1&labels=long_enough_h")
    expect(page.get_by_role("heading", name="be trusted?")).to_be_visible()
    scored = {r: h for r, h in given.items() if scores[r] is not None}
    expected = [[0, 0], [0, 0]]
    for r, human in scored.items():
        expected[int(human)][int(bool(scores[r]))] += 1
    table = page.locator("#confusion tbody tr")
    shown = [[int(td) for td in table.nth(i).locator("td").all_inner_texts()] for i in range(2)]
    assert shown == expected
    expect(page.locator("#n")).to_have_text(str(len(scored)))
    expect(page.locator("#verdict")).to_contain_text("too few labels")
    cells = page.locator("svg[aria-label='confusion matrix'] text[data-cell]")
    assert [int(t) for t in cells.all_text_contents()] == [v for row in expected for v in row]
    page.screenshot(path=str(screenshots / "agreement.png"), full_page=True)
