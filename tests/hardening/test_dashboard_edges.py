"""CSV formula cells, dashboard headers, login CSRF."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from engine.runs.cells import escape_cell
from engine.runs.export import write_records
from engine.web.headers import CSP
from tests.api.conftest import Api

HOSTILE = ['=HYPERLINK("http://evil.example","x")', "+1+1", "-2+3", "@SUM(A1)", "\tx", "ok"]


def _sign_in(api: Api, headers: dict[str, str]) -> None:
    key = headers["Authorization"].removeprefix("Bearer ")
    reply = api.client.post("/ui/signin", data={"api_key": key}, follow_redirects=False)
    assert reply.status_code == 303, reply.text


def test_escape_cell_prefixes_formula_text_only() -> None:
    assert [escape_cell(v) for v in HOSTILE] == [
        '\'=HYPERLINK("http://evil.example","x")',
        "'+1+1",
        "'-2+3",
        "'@SUM(A1)",
        "'\tx",
        "ok",
    ]
    assert escape_cell(-0.5) == -0.5  # numbers stay numbers
    assert escape_cell(None) is None


def test_cli_csv_and_tsv_outputs_escape_formulas_and_jsonl_keeps_them(tmp_path: Path) -> None:
    records = [
        {"row_index": i, "check": "c", "status": "ok", "score": -1.0, "explanation": text}
        for i, text in enumerate(HOSTILE)
    ]
    for suffix, delimiter in ((".csv", ","), (".tsv", "\t")):
        out = tmp_path / f"x{suffix}"
        write_records(out, records, "t")
        rows = list(csv.DictReader(io.StringIO(out.read_text()), delimiter=delimiter))
        assert [r["explanation"] for r in rows][:4] == ["'" + text for text in HOSTILE[:4]], suffix
        assert rows[-1]["explanation"] == "ok"
        assert rows[0]["score"] == "-1.0"
    jsonl = tmp_path / "x.jsonl"
    write_records(jsonl, records, "t")
    raw = [json.loads(line)["explanation"] for line in jsonl.read_text().splitlines()]
    assert raw == HOSTILE


def _run_with_outputs(api: Api, headers: dict[str, str]) -> str:
    rows = [
        {"id": f"q{i}", "model_output": v, "scenario_result": "no"} for i, v in enumerate(HOSTILE)
    ]
    reply = api.client.post(
        "/v1/runs", headers=headers, json={"checks": ["exact_match"], "rows": rows}
    )
    assert reply.status_code == 202, reply.text
    assert api.wait_run(headers, reply.json()["id"])["status"] == "succeeded"
    return str(reply.json()["id"])


def test_dashboard_and_api_csv_exports_escape_formulas(api: Api) -> None:
    a = api.tenant("a")
    run_id = _run_with_outputs(api, a)
    _sign_in(api, a)
    exported = api.client.get(f"/ui/runs/{run_id}/export.csv")
    assert exported.status_code == 200, exported.text
    rows = list(csv.DictReader(io.StringIO(exported.text)))
    outputs = sorted(r["model_output"] for r in rows)
    assert outputs == sorted(["'" + v for v in HOSTILE[:5]] + ["ok"])
    jsonl = api.client.get(f"/ui/runs/{run_id}/export.jsonl")
    assert sorted(json.loads(line)["model_output"] for line in jsonl.text.splitlines()) == sorted(
        HOSTILE
    )


def test_every_ui_response_has_the_security_headers(api: Api) -> None:
    a = api.tenant("a")
    paths = ["/ui/signin", "/ui/runs", "/ui/static/app.css", "/ui/no-such-page"]
    _sign_in(api, a)
    paths += ["/ui/runs", "/ui/checks", "/ui/runs/nope"]
    for path in paths:
        reply = api.client.get(path, follow_redirects=False)
        assert reply.headers["x-frame-options"] == "DENY", path
        assert reply.headers["x-content-type-options"] == "nosniff", path
        assert reply.headers["content-security-policy"] == CSP, path
    assert "unsafe-inline" not in CSP and "frame-ancestors 'none'" in CSP
    assert "content-security-policy" not in api.client.get("/healthz").headers  # API untouched


def test_cross_site_signin_is_refused(api: Api) -> None:
    a = api.tenant("a")
    key = a["Authorization"].removeprefix("Bearer ")
    for headers in (
        {"Origin": "https://evil.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
    ):
        reply = api.client.post(
            "/ui/signin", data={"api_key": key}, headers=headers, follow_redirects=False
        )
        assert reply.status_code == 403, headers
        assert "set-cookie" not in reply.headers
        assert "cross-site sign-in refused" in reply.text
    same = api.client.post(
        "/ui/signin",
        data={"api_key": key},
        headers={"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin"},
        follow_redirects=False,
    )
    assert same.status_code == 303, same.text
    assert "set-cookie" in same.headers
