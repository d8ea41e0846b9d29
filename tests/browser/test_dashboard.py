"""The dashboard in chromium: sign in, a run, its rows, a comparison, the editor, isolation."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import Dashboard

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def sign_in(
    page: Any, dashboard: Dashboard, key: str | None = None, path: str = "/ui/runs"
) -> None:
    from playwright.sync_api import expect

    page.goto(dashboard.url + path)
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.get_by_label("API key").fill(key or dashboard.key)
    page.get_by_role("button", name="Sign in").click()


def test_sign_in_lists_runs_and_keeps_the_key_out_of_pages(
    page: Any, dashboard: Dashboard, screenshots: Path
) -> None:
    from playwright.sync_api import expect

    sign_in(page, dashboard)
    expect(page.get_by_role("heading", name="Runs")).to_be_visible()
    expect(page.get_by_role("link", name=dashboard.run_a)).to_be_visible()
    expect(page.get_by_role("link", name=dashboard.run_b)).to_be_visible()
    page.screenshot(path=str(screenshots / "dashboard-runs.png"), full_page=True)
    assert dashboard.key not in page.content()
    cookie = next(c for c in page.context.cookies() if c["name"] == "scorebox_session")
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Strict"
    assert dashboard.key not in cookie["value"]


def test_the_root_sends_a_browser_to_sign_in_then_to_the_runs(
    page: Any, dashboard: Dashboard
) -> None:
    from playwright.sync_api import expect

    page.goto(dashboard.url + "/")  # signed out: the sign-in form, then back to the runs
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert page.url == f"{dashboard.url}/ui/signin?next=/ui/runs"
    page.get_by_label("API key").fill(dashboard.key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Runs")).to_be_visible()
    page.goto(dashboard.url + "/")  # signed in: straight to the runs
    expect(page.get_by_role("heading", name="Runs")).to_be_visible()
    assert page.url == f"{dashboard.url}/ui/runs"
    index = page.request.get(dashboard.url + "/", headers={"Accept": "application/json"})
    assert index.status == 200
    assert index.json()["links"]["docs"] == "/docs"


def test_a_wrong_key_is_refused(page: Any, dashboard: Dashboard) -> None:
    from playwright.sync_api import expect

    sign_in(page, dashboard, key="sbx_not_a_key")
    expect(page.get_by_role("alert")).to_contain_text("unknown API key")


def test_finished_run_shows_summary_and_chart(
    page: Any, dashboard: Dashboard, screenshots: Path
) -> None:
    from playwright.sync_api import expect

    sign_in(page, dashboard, path=f"/ui/runs/{dashboard.run_a}")
    expect(page.get_by_role("heading", name=f"Run {dashboard.run_a}")).to_be_visible()
    summary = page.get_by_role("table", name="summary")
    expect(summary).to_contain_text("long_enough@1")
    expect(summary).to_contain_text("error 6")
    expect(page.get_by_role("img", name="pass and fail of long_enough")).to_be_visible()
    expect(page.get_by_role("img", name="statuses of long_enough")).to_be_visible()
    expect(page.get_by_role("img", name="score distribution of length")).to_be_visible()
    page.screenshot(path=str(screenshots / "dashboard-run.png"), full_page=True)


def _labels(chart: Any, cls: str) -> list[str]:
    return [t.strip() for t in chart.locator(f"text.{cls}").all_text_contents()]


def _bar_titles(chart: Any) -> list[str]:
    return [t for t in chart.locator("rect > title").all_text_contents() if t]


def test_chart_labels_match_the_runs_summary(page: Any, dashboard: Dashboard) -> None:
    with dashboard.v1() as client:
        run = client.get(f"/v1/runs/{dashboard.run_a}").json()
    summary = {s["check"]: s for s in run["summary"]}
    sign_in(page, dashboard, path=f"/ui/runs/{dashboard.run_a}")

    bool_check = summary["long_enough"]
    ok = bool_check["scored"]
    passed = round(bool_check["pass_rate"] * ok)
    pass_fail = page.get_by_role("img", name="pass and fail of long_enough")
    assert _labels(pass_fail, "bar-label") == [
        f"{passed} ({100 * passed / ok:.1f}%)",
        f"{ok - passed} ({100 * (ok - passed) / ok:.1f}%)",
    ]
    assert _labels(pass_fail, "tick-x") == ["pass", "fail"]
    assert _labels(pass_fail, "tick-y")[0] == "0"

    statuses = page.get_by_role("img", name="statuses of long_enough")
    counts = bool_check["counts"]
    order = sorted(counts, key=lambda s: (s != "ok", s))
    assert _labels(statuses, "tick-x") == order
    assert _labels(statuses, "bar-label") == [str(counts[s]) for s in order]

    numeric = summary["length"]
    histogram = page.get_by_role("img", name="score distribution of length")
    titles = _bar_titles(histogram)
    assert len(titles) == 20
    in_bins = [int(m.group(1)) for t in titles if (m := re.search(r": (\d+) rows?$", t))]
    assert sum(in_bins) == numeric["scored"] == sum(counts.values())
    assert titles[0].startswith(f"scores [{numeric['min']:.3g}, ")
    assert f", {numeric['max']:.3g}]: " in titles[-1]  # the last bin holds the maximum
    ticks = _labels(histogram, "tick-x")
    assert ticks[0] == f"{numeric['min']:.3g}" and ticks[-1] == f"{numeric['max']:.3g}"
    y_ticks = [int(t) for t in _labels(histogram, "tick-y")]
    assert y_ticks[0] == 0 and y_ticks[-1] >= max(in_bins)


def test_filter_the_row_table_to_error_rows_and_open_one(
    page: Any, dashboard: Dashboard, screenshots: Path
) -> None:
    from playwright.sync_api import expect

    sign_in(page, dashboard, path=f"/ui/runs/{dashboard.run_a}")
    form = page.get_by_role("form", name="filter rows")
    form.get_by_label("Status").select_option("error")
    form.get_by_role("button", name="Apply").click()
    rows = page.get_by_role("table", name="rows").get_by_role("row")
    expect(rows).to_have_count(7)  # the header and the six "boom" rows
    expect(page.get_by_role("table", name="rows")).not_to_contain_text("ok")
    page.get_by_role("link", name="Row 2", exact=True).click()
    expect(page.get_by_role("heading", name="Row 2 (r2)")).to_be_visible()
    result = page.get_by_role("region", name="result of long_enough")
    expect(result).to_contain_text("ValueError")
    expect(result).to_contain_text("boom row")
    page.screenshot(path=str(screenshots / "dashboard-row.png"), full_page=True)


def test_compare_two_runs_shows_the_changed_rows(
    page: Any, dashboard: Dashboard, screenshots: Path
) -> None:
    from playwright.sync_api import expect

    sign_in(page, dashboard, path=f"/ui/compare?a={dashboard.run_a}&b={dashboard.run_b}")
    deltas = page.get_by_role("table", name="deltas")
    expect(deltas).to_contain_text("long_enough")
    long_enough = deltas.get_by_role("row").filter(has_text="long_enough")
    expect(long_enough).to_contain_text("significant")
    expect(long_enough).not_to_contain_text("not significant")  # 6 of 30 rows pass -> fail
    changed = page.get_by_role("table", name="changed rows of long_enough")
    expect(changed.get_by_role("row").nth(1)).to_contain_text("pass → fail")
    expect(changed).to_contain_text(re.compile(r"\br5\b"))  # "short!!": 7 > 5, not > 12
    # one chart per shared check, both runs overlaid, with the counts of each
    both = page.get_by_role("img", name="pass and fail of long_enough, A and B")
    expect(both).to_be_visible()
    titles = _bar_titles(both)
    assert [t.split(":")[0] for t in titles] == ["A pass", "A fail", "B pass", "B fail"]
    assert titles[0].startswith("A pass: 18 of 24") and titles[2].startswith("B pass: 12 of 24")
    expect(page.get_by_role("img", name="score distribution of length, A and B")).to_be_visible()
    page.screenshot(path=str(screenshots / "dashboard-compare.png"), full_page=True)


def test_edit_a_check_see_the_error_line_fix_it_and_save_version_2(
    page: Any, dashboard: Dashboard, screenshots: Path
) -> None:
    from playwright.sync_api import expect

    sign_in(page, dashboard, path="/ui/checks/editable/edit")
    expect(page.get_by_role("heading", name="Edit editable")).to_be_visible()
    source = page.get_by_role("textbox", name="Source")
    expect(page.get_by_role("status").first).to_have_text("Valid")
    broken = (
        "def evaluate(model_output: str) -> bool:\n"
        "    words = model_output.split()\n"
        "    return len(words) >\n"
    )
    source.fill(broken)
    issues = page.get_by_role("list", name="validation issues")
    expect(issues).to_contain_text(re.compile(r"Line 3\b"))
    page.screenshot(path=str(screenshots / "dashboard-editor.png"), full_page=True)
    source.fill(broken.replace("len(words) >", "len(words) > 3"))
    expect(page.get_by_role("status").first).to_have_text("Valid")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", name="editable version 2")).to_be_visible()
    expect(page.get_by_role("status")).to_have_text("Saved version 2.")
    page.screenshot(path=str(screenshots / "dashboard-check.png"), full_page=True)
    page.get_by_role("link", name="Diff with previous").click()
    expect(page.get_by_text("+    return len(words) > 3")).to_be_visible()


def test_tenant_b_cannot_open_tenant_a_run(page: Any, dashboard: Dashboard) -> None:
    from playwright.sync_api import expect

    sign_in(page, dashboard, key=dashboard.other_key, path=f"/ui/runs/{dashboard.run_a}")
    expect(page.get_by_role("heading", name="Not found")).to_be_visible()
    reply = page.request.get(f"{dashboard.url}/ui/runs/{dashboard.run_a}")
    assert reply.status == 404
    reply = page.request.get(f"{dashboard.url}/ui/runs/{dashboard.run_a}/rows/0")
    assert reply.status == 404
    page.goto(f"{dashboard.url}/ui/runs")
    expect(page.get_by_role("link", name=dashboard.run_a)).to_have_count(0)


def test_health_page_shows_readiness(page: Any, dashboard: Dashboard, screenshots: Path) -> None:
    from playwright.sync_api import expect

    sign_in(page, dashboard, path="/ui/health")
    readiness = page.get_by_role("table", name="readiness")
    expect(readiness).to_contain_text("database")
    expect(readiness).to_contain_text("docker")
    page.screenshot(path=str(screenshots / "dashboard-health.png"), full_page=True)


def test_state_changing_forms_need_the_csrf_token(page: Any, dashboard: Dashboard) -> None:
    sign_in(page, dashboard)
    reply = page.request.post(
        f"{dashboard.url}/ui/checks/save",
        form={"name": "editable", "source": "def evaluate(model_output):\n    return 1\n"},
    )
    assert reply.status == 403
    reply = page.request.post(
        f"{dashboard.url}/ui/checks/validate", data={"source": "x = 1\n", "name": "x"}
    )
    assert reply.status == 403


def test_scorebox_run_compare_prints_deltas_and_gates_on_regression(dashboard: Dashboard) -> None:
    from click.testing import CliRunner

    from engine.cli import main

    env = {"SCOREBOX_SERVER": dashboard.url, "SCOREBOX_API_KEY": dashboard.key}
    args = ["run", "compare", dashboard.run_a, dashboard.run_b]
    shown = CliRunner().invoke(main, args, env=env)
    assert shown.exit_code == 0, shown.output
    assert "30 rows matched by id" in shown.output
    assert "pass rate -0.250" in shown.output and "significant" in shown.output
    assert "r5: pass -> fail (ok True -> ok False)" in shown.output
    gated = CliRunner().invoke(main, [*args, "--fail-on-regression"], env=env)
    assert gated.exit_code == 3, gated.output
    improved = CliRunner().invoke(
        main, ["run", "compare", dashboard.run_b, dashboard.run_a, "--fail-on-regression"], env=env
    )
    assert improved.exit_code == 0, improved.output
    other = CliRunner().invoke(main, args, env={**env, "SCOREBOX_API_KEY": dashboard.other_key})
    assert other.exit_code != 0
    assert "404" in other.output or "not found" in other.output.lower(), other.output


GOOD_CITY = (
    "def evaluate(model_output: str, scenario_result: str) -> bool:\n"
    "    return str(scenario_result).lower() in model_output.lower()\n"
)
CASE_SENSITIVE_CITY = GOOD_CITY.replace(".lower()", "")
CITY_EXAMPLES = [
    {
        "row": {"model_output": "The capital is Paris.", "scenario_result": "Paris"},
        "expected": True,
    },
    {"row": {"model_output": "It is Lyon.", "scenario_result": "Paris"}, "expected": False},
    {"row": {"model_output": "paris, of course", "scenario_result": "Paris"}, "expected": True},
]


def test_generate_a_check_see_attempts_examples_and_self_test_then_save_it(
    page: Any, dashboard: Dashboard, screenshots: Path
) -> None:
    from playwright.sync_api import expect

    # attempt 1 misses "paris, of course"; the feedback gets attempt 2 right
    dashboard.llm.reply(f"```python\n{CASE_SENSITIVE_CITY}```")
    dashboard.llm.reply(f"Fixed:\n```python\n{GOOD_CITY}```")
    sign_in(page, dashboard, path="/ui/checks")
    page.get_by_role("link", name="Generate a check").click()
    form = page.get_by_role("form", name="generate a check")
    form.get_by_label("Description").fill("The answer names the expected city, ignoring case.")
    form.get_by_label("Examples").fill("\n".join(json.dumps(e) for e in CITY_EXAMPLES))
    form.get_by_label("Reads scenario_result").check()
    form.get_by_role("button", name="Generate").click()
    outcome = page.get_by_role("region", name="outcome")
    expect(outcome).to_contain_text("accepted after 2 attempts", timeout=180_000)
    expect(outcome).to_contain_text("self-test: 3 of 3 examples agreed")
    examples = page.get_by_role("table", name="examples")
    expect(examples.get_by_role("row")).to_have_count(4)
    expect(examples.get_by_role("row").nth(3)).to_contain_text("paris, of course")
    expect(examples.get_by_role("row").nth(3)).to_contain_text("yes")
    expect(page.get_by_text("Attempt 1: 2 of 3 examples agreed")).to_be_visible()
    expect(page.get_by_text("Attempt 2: accepted")).to_be_visible()
    assert "expected True, got False" in str(dashboard.llm.last_message())  # the feedback sent
    page.screenshot(path=str(screenshots / "dashboard-generate.png"), full_page=True)
    save = page.get_by_role("form", name="save the generated check")
    expect(save.get_by_label("Source")).to_have_value(GOOD_CITY)
    save.get_by_label("Name").fill("city")
    save.get_by_role("button", name="Save as a check").click()
    expect(page.get_by_role("heading", name="city version 1")).to_be_visible()
    expect(page.get_by_role("status")).to_have_text("Saved version 1.")
    expect(page.get_by_text("policy restricted")).to_be_visible()
    expect(page.locator('[data-field="origin"]')).to_have_text("generated")


def test_generate_form_refuses_a_post_without_the_csrf_token(
    page: Any, dashboard: Dashboard
) -> None:
    sign_in(page, dashboard)
    asked = len(dashboard.llm.requests)
    reply = page.request.post(
        f"{dashboard.url}/ui/checks/generate", form={"description": "The answer is polite."}
    )
    assert reply.status == 403
    assert len(dashboard.llm.requests) == asked


SLOW = (
    "import time\n\ndef evaluate(model_output: str) -> bool:\n"
    "    time.sleep(0.25)\n    return True\n"
)


def test_progress_updates_in_place_while_a_run_goes_then_stops(
    page: Any, dashboard: Dashboard
) -> None:
    from playwright.sync_api import expect

    with dashboard.v1() as client:
        assert client.post("/v1/checks", json={"name": "slow", "source": SLOW}).status_code == 201
        rows = [{"id": f"s{i}", "model_output": f"row {i}"} for i in range(80)]
        started = client.post("/v1/runs", json={"checks": ["slow"], "rows": rows})
        assert started.status_code == 202, started.text
        run_id = started.json()["id"]
    polls: list[str] = []
    page.on("request", lambda r: polls.append(r.url) if "/ui/progress" in r.url else None)
    sign_in(page, dashboard)
    page.evaluate("window.sameDocument = true")  # gone if the page reloads
    listed = page.get_by_role("row").filter(has=page.get_by_role("link", name=run_id))
    done = listed.locator('[data-field="done"]')
    expect(done).not_to_have_text("0", timeout=120_000)  # "0" when the page was rendered
    first = int(done.inner_text())
    expect(done).not_to_have_text(str(first), timeout=60_000)  # and again, in place
    assert page.evaluate("window.sameDocument") is True
    assert polls and all(run_id in url for url in polls)

    page.get_by_role("link", name=run_id).click()
    expect(page.get_by_role("heading", name=f"Run {run_id}")).to_be_visible()
    page.evaluate("window.sameDocument = true")
    header = page.locator(f'[data-run="{run_id}"]')
    shown = int(header.locator('[data-field="done"]').inner_text())
    assert shown < 80, "the run finished before its page was seen: make SLOW slower"
    expect(header.locator('[data-field="done"]')).not_to_have_text(str(shown), timeout=60_000)
    expect(header.locator('[data-field="status"]')).to_have_text("succeeded", timeout=180_000)
    expect(header.locator('[data-field="done"]')).to_have_text("80")
    expect(page.get_by_role("status").filter(has_text="The run has finished")).to_be_visible()
    assert page.evaluate("window.sameDocument") is True
    seen = len(polls)
    page.wait_for_timeout(2500)  # more than two periods: a poll would have gone out
    assert len(polls) == seen, "live.js kept polling after the run finished"
    page.get_by_role("link", name="show its final summary").click()
    expect(page.get_by_role("table", name="summary")).to_contain_text("ok 80")
