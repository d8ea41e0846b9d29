"""``scorebox labels import|export``, ``scorebox check agreement`` and ``scorebox run
--min-agreement`` against the app (in process, SQLite and PostgreSQL): the CLI's HTTP
client is the app's test client."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from engine.cli import main
from engine.cli.agreement import check_agreement
from engine.cli.remote import Remote
from tests.api.conftest import Api
from tests.api.test_labels import _run, _tenant

ENV = {"SCOREBOX_SERVER": "http://testserver", "SCOREBOX_API_KEY": "unused"}


@pytest.fixture
def cli(api: Api, monkeypatch: pytest.MonkeyPatch) -> tuple[Api, str]:
    """The CLI talking to ``api`` as a new tenant; returns the app and the tenant id."""
    headers, tenant_id = _tenant(api)

    def remote_init(
        self: Remote, server: str | None, api_key: str | None, timeout: float = 0
    ) -> None:
        self.server = "http://testserver"
        self.client = api.client  # type: ignore[assignment]

    api.client.headers.update(headers)
    monkeypatch.setattr(Remote, "__init__", remote_init)
    return api, tenant_id


def _cli(*args: str) -> Result:
    return CliRunner(env=ENV).invoke(main, list(args), catch_exceptions=False)


def test_import_csv_and_jsonl_then_export(cli: tuple[Api, str], tmp_path: Path) -> None:
    api, tid = cli
    run = _run(api, tid, [True, False, True])
    (tmp_path / "a.csv").write_text("row,value,annotator\n0,yes,ann\n1,no,ann\n2,true,\n")
    r = _cli(
        "labels",
        "import",
        str(tmp_path / "a.csv"),
        "--name",
        "helpful",
        "--run",
        run,
        "--type",
        "bool",
        "--annotator",
        "default-person",
    )
    assert r.exit_code == 0, r.output
    assert "imported 3 labels" in r.output
    (tmp_path / "b.jsonl").write_text(
        json.dumps({"row": 0, "value": False, "annotator": "bob", "comment": "too short"}) + "\n"
    )
    r = _cli("labels", "import", str(tmp_path / "b.jsonl"), "--name", "helpful", "--run", run)
    assert r.exit_code == 0, r.output
    out = tmp_path / "out.csv"
    r = _cli("labels", "export", "--name", "helpful", "--run", run, "-o", str(out))
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(out.open()))
    assert [(x["row"], x["value"], x["annotator"]) for x in rows] == [
        ("0", "true", "ann"),
        ("1", "false", "ann"),
        ("2", "true", "default-person"),
        ("0", "false", "bob"),
    ]
    assert rows[3]["comment"] == "too short"
    # the export imports again as it is
    r = _cli("labels", "import", str(out), "--name", "helpful", "--run", run)
    assert r.exit_code == 0 and "imported 4 labels" in r.output
    jsonl = _cli("labels", "export", "--annotator", "bob")
    assert [json.loads(line)["value"] for line in jsonl.output.splitlines()] == [False, False]


def test_import_errors_name_the_fix(cli: tuple[Api, str], tmp_path: Path) -> None:
    api, tid = cli
    run = _run(api, tid, [True, False])
    (tmp_path / "bad.csv").write_text("row,value\n0,yes\nx,no\n")
    r = _cli(
        "labels",
        "import",
        str(tmp_path / "bad.csv"),
        "--name",
        "helpful",
        "--run",
        run,
        "--type",
        "bool",
    )
    assert r.exit_code == 1 and "bad.csv:3: row 'x' is not a row index" in r.output
    (tmp_path / "v.csv").write_text("row,value\n0,maybe\n")
    r = _cli(
        "labels",
        "import",
        str(tmp_path / "v.csv"),
        "--name",
        "helpful",
        "--run",
        run,
        "--type",
        "bool",
    )
    assert r.exit_code == 1 and "'maybe' is not true or false" in r.output
    (tmp_path / "u.csv").write_text("row,value\n0,yes\n")
    r = _cli("labels", "import", str(tmp_path / "u.csv"), "--name", "other", "--run", run)
    assert r.exit_code == 1 and "PUT /v1/label-names/other" in r.output


def _labelled(api: Api, tid: str, good: bool, per_class: int = 35) -> str:
    human = [True] * per_class + [False] * per_class
    check = human if good else [not h if i % 3 else h for i, h in enumerate(human)]
    run = _run(api, tid, list(check))
    api.client.put("/v1/label-names/helpful", json={"type": "bool"})
    labels = [
        {"target": {"run": run, "row": i}, "name": "helpful", "value": h, "annotator": "ann"}
        for i, h in enumerate(human)
    ]
    assert api.client.post("/v1/labels", json={"labels": labels}).status_code == 201
    return run


def test_check_agreement_json_is_the_api_report(cli: tuple[Api, str]) -> None:
    api, tid = cli
    _labelled(api, tid, good=True)
    r = _cli(
        "check", "agreement", "is_helpful", "--labels", "helpful", "--json", "--resamples", "500"
    )
    assert r.exit_code == 0, r.output
    via_api = api.client.get(
        "/v1/agreement", params={"check": "is_helpful", "labels": "helpful", "resamples": 500}
    ).json()
    assert json.loads(r.output) == via_api
    text = _cli("check", "agreement", "is_helpful", "--labels", "helpful", "--resamples", "500")
    assert "confusion (rows: people, columns: the check)" in text.output
    assert "kappa" in text.output and "verdict: enough labels" in text.output


def test_min_agreement_gate_exit_codes(cli: tuple[Api, str], tmp_path: Path) -> None:
    api, tid = cli
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"model_output": "x"}) + "\n")
    base = ["run", "--check", "is_helpful", "--data", str(data)]
    # too few labels: exit 2, before scoring, with the verdict
    _labelled(api, tid, good=True, per_class=10)
    r = _cli(*base, "--min-agreement", "helpful:kappa=0.6")
    assert r.exit_code == 2, r.output
    assert "too few labels: 20 more 'false', 20 more 'true'" in r.output
    # enough labels, poor agreement: exit 3, naming the lower bound
    api.client.delete("/v1/labels", params={"name": "helpful"})
    _labelled(api, tid, good=False)
    r = _cli(*base, "--min-agreement", "helpful:tpr=0.8,tnr=0.8")
    assert r.exit_code == 3, r.output
    assert "tpr" in r.output and "its lower bound is below 0.8" in r.output
    bad = _cli(*base, "--min-agreement", "helpful:kapa=0.6")
    assert bad.exit_code == 2 and "'kapa' is not one of" in bad.output


def test_min_agreement_passes_on_the_lower_bound(cli: tuple[Api, str]) -> None:
    api, tid = cli
    _labelled(api, tid, good=True)
    check_agreement("http://testserver", "k", ["is_helpful"], ["helpful:kappa=0.6,tpr=0.8"])
    # TNR is 35/35 = 1.0, but its Wilson interval's lower bound is 0.90: not 0.99
    with pytest.raises(SystemExit) as exc:
        check_agreement("http://testserver", "k", ["is_helpful"], ["helpful:kappa=1.0,tnr=0.99"])
    assert exc.value.code == 3


def test_corrected_pass_rates(cli: tuple[Api, str]) -> None:
    """Rogan-Gladen beside the measured rate, from the check's TPR and TNR on the labels."""
    from engine.calibration.prevalence import rogan_gladen

    api, tid = cli
    # labelled: 40 people-pass (check passes 36), 40 people-fail (check fails 32)
    human = [True] * 40 + [False] * 40
    check = [True] * 36 + [False] * 4 + [False] * 32 + [True] * 8
    labelled = _run(api, tid, check)
    api.client.put("/v1/label-names/helpful", json={"type": "bool"})
    labels = [
        {"target": {"run": labelled, "row": i}, "name": "helpful", "value": h}
        for i, h in enumerate(human)
    ]
    assert api.client.post("/v1/labels", json={"labels": labels}).status_code == 201
    # an unlabelled production run: 60 of 100 pass
    production = _run(api, tid, [True] * 60 + [False] * 40)
    body = api.client.get(
        f"/v1/runs/{production}/corrected-pass-rates", params={"labels": "helpful"}
    ).json()
    (entry,) = body["checks"]
    assert entry["measured"] == pytest.approx(0.6)
    expected = rogan_gladen(0.6, 100, 36 / 40, 32 / 40, 40, 40)
    assert expected.value is not None and expected.ci is not None
    assert entry["corrected"]["value"] == pytest.approx(expected.value, abs=1e-6)
    assert entry["corrected"]["ci"] == pytest.approx(list(expected.ci), abs=1e-6)
    # (0.6 + 0.8 - 1) / (0.9 + 0.8 - 1) = 0.571
    assert entry["corrected"]["value"] == pytest.approx(0.4 / 0.7, abs=1e-6)
    text = _cli("labels", "corrected", production, "--labels", "helpful")
    assert text.exit_code == 0, text.output
    assert "is_helpful@1: measured 0.600 of 100, corrected 0.571" in text.output
    other = api.client.get(
        f"/v1/runs/{production}/corrected-pass-rates", params={"labels": "nope"}
    ).json()
    assert other["checks"][0]["corrected"] is None
    assert "not declared" in other["checks"][0]["reason"]


def test_a_required_agreement_refuses_runs_until_labels_meet_it(
    cli: tuple[Api, str], tmp_path: Path
) -> None:
    api, tid = cli
    pushed = api.client.post(
        "/v1/checks",
        json={
            "name": "is_helpful",
            "source": "def evaluate(model_output: str) -> bool:\n    return True\n",
        },
    )
    assert pushed.status_code == 201, pushed.text
    _labelled(api, tid, good=False)
    r = _cli(
        "check", "agreement", "is_helpful", "--labels", "helpful", "--require", "tpr=0.8,tnr=0.8"
    )
    assert r.exit_code == 0, r.output
    assert "is_helpful@1 now requires helpful:tpr=0.8,tnr=0.8" in r.output
    flagged = api.client.get("/v1/required-agreements").json()
    assert [(x["check"], x["status"]) for x in flagged] == [("is_helpful@1", "below")]
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"model_output": "x"}) + "\n")
    refused = _cli(
        "run", "--check", "is_helpful", "--data", str(data), "--min-agreement", "required"
    )
    assert refused.exit_code == 3, refused.output
    assert "(required of is_helpful@1)" in refused.output
    # labels arrive that the check agrees with: re-checked on the next read
    api.client.delete("/v1/labels", params={"name": "helpful"})
    _labelled(api, tid, good=True)
    passed = api.client.get("/v1/required-agreements", params={"check": "is_helpful"}).json()
    assert passed[0]["status"] == "passed"
    # comma-separated; given twice, refused rather than the last one taken unseen
    both = api.client.get("/v1/required-agreements", params={"check": "nothing,is_helpful"})
    assert [b["status"] for b in both.json()] == ["passed"], both.text
    twice = api.client.get("/v1/required-agreements", params={"check": ["a", "is_helpful"]})
    assert twice.status_code == 422 and "'check' given 2 times" in twice.json()["detail"]
    # another tenant sees none of it, and cannot set one on this tenant's check
    other, _ = _tenant(api)
    assert api.client.get("/v1/required-agreements", headers=other).json() == []
    put = api.client.put(
        "/v1/checks/is_helpful/required-agreement",
        headers=other,
        json={"requirement": "helpful:kappa=0.5"},
    )
    assert put.status_code == 404
    assert api.client.delete("/v1/checks/is_helpful/required-agreement").json() == {"deleted": 1}
    assert api.client.get("/v1/required-agreements").json() == []


def test_labels_as_generator_examples_with_a_held_back_part(
    cli: tuple[Api, str], tmp_path: Path
) -> None:
    api, tid = cli
    run = _labelled(api, tid, good=False, per_class=20)  # the check is wrong on 2 rows in 3
    out = tmp_path / "examples.jsonl"
    r = _cli(
        "labels", "examples", "--name", "helpful", "--run", run, "--holdout", "0.25", "-o", str(out)
    )
    assert r.exit_code == 0, r.output
    assert "wrote 30 examples" in r.output and "held back 10 rows" in r.output
    examples = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(examples) == 30
    # row i's input is "row i" (see _run); people pass rows 0-19
    train_rows = {int(e["row"]["model_output"].split()[1]): e["expected"] for e in examples}
    assert all(expected == (row < 20) for row, expected in train_rows.items())
    report = api.client.get(
        "/v1/agreement",
        params={
            "check": "is_helpful",
            "labels": "helpful",
            "run": run,
            "holdout": 0.25,
            "resamples": 200,
        },
    ).json()
    held = {d["target"]["row"] for d in report["disagreements"]}
    assert report["n"] == 10 and report["holdout"] == {"fraction": 0.25, "seed": 0}
    assert report["per_class"] == {"false": 5, "true": 5}
    assert held and held.isdisjoint(train_rows)  # the report is on held-back rows only
    text = _cli(
        "check",
        "agreement",
        "is_helpful",
        "--labels",
        "helpful",
        "--run",
        run,
        "--holdout",
        "0.25",
        "--resamples",
        "200",
    )
    assert "on the held-back rows only (0.25, seed 0)" in text.output
    assert "n = 10" in text.output


def test_a_suites_min_agreement_gates_as_the_flag_does(
    cli: tuple[Api, str], tmp_path: Path
) -> None:
    api, tid = cli
    (tmp_path / "rows.jsonl").write_text(json.dumps({"model_output": "x"}) + "\n")
    suite = tmp_path / "scorebox.yaml"
    suite.write_text(
        "data: rows.jsonl\nchecks: [is_helpful]\nmin_agreement: ['helpful:tpr=0.8,tnr=0.8']\n"
    )
    # too few labels: exit 2, with the verdict
    _labelled(api, tid, good=True, per_class=10)
    r = _cli("run", "--suite", str(suite))
    assert r.exit_code == 2, r.output
    assert "too few labels: 20 more 'false', 20 more 'true'" in r.output
    # enough labels, poor agreement: exit 3, judged on the lower bound
    api.client.delete("/v1/labels", params={"name": "helpful"})
    _labelled(api, tid, good=False)
    r = _cli("run", "--suite", str(suite))
    assert r.exit_code == 3, r.output
    assert "its lower bound is below 0.8" in r.output
    # --min-agreement adds to the suite's list: the suite's still refuses the run
    r = _cli("run", "--suite", str(suite), "--min-agreement", "helpful:kappa=-1")
    assert r.exit_code == 3, r.output
    # a bad entry is the suite's problem, with its line and the form to use
    suite.write_text("data: rows.jsonl\nchecks: [is_helpful]\nmin_agreement: [helpful:kapa=1]\n")
    bad = _cli("run", "--suite", str(suite))
    assert bad.exit_code == 2, bad.output
    assert "scorebox.yaml:3: min_agreement[0]" in bad.output
    assert "'kapa' is not one of" in bad.output


def test_generate_from_labels_holds_rows_back_and_reports_on_them(
    cli: tuple[Api, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The generator sees the labelled rows not held back; the generated check is scored
    on the held-back rows alone and its agreement with their labels reported."""
    import generator.adapters
    import generator.pipeline
    from engine.cli.generate_labels import fetch_split, held_back_report
    from engine.contract import Status
    from engine.models import RowResult

    api, tid = cli
    human = [i % 2 == 0 for i in range(80)]  # people pass the even rows
    run = _run(api, tid, [True] * 80)
    api.client.put("/v1/label-names/helpful", json={"type": "bool"})
    labels = [
        {"target": {"run": run, "row": i}, "name": "helpful", "value": h, "annotator": "ann"}
        for i, h in enumerate(human)
    ]
    assert api.client.post("/v1/labels", json={"labels": labels}).status_code == 201

    def verdict(row_text: str) -> bool:  # the "generated check": passes even rows and 1, 3
        i = int(row_text.rsplit(maxsplit=1)[-1])
        return i % 2 == 0 or i in (1, 3)

    seen: dict[str, object] = {}

    class Result:
        accepted = True
        code = "def evaluate(model_output: str) -> bool:\n    return True\n"
        prompt_template = None
        model_check_type = None
        message = "accepted"
        attempts: list[object] = []

    def fake_generate(description: str, **kwargs: object) -> Result:
        seen["examples"] = kwargs["examples"]
        return Result()

    def fake_runner(runner: object) -> object:
        def run(source: str, output_type: object, rows: list[object]) -> list[RowResult]:
            return [
                RowResult(status=Status.OK, score=verdict(r.model_output))  # type: ignore[attr-defined]
                for r in rows
            ]

        return run

    class FakeSandbox:
        def __init__(self, settings: object) -> None: ...

        def close(self) -> None: ...

    monkeypatch.setattr(generator.pipeline, "generate_check", fake_generate)
    monkeypatch.setattr(generator.adapters, "engine_runner", fake_runner)
    monkeypatch.setattr("engine.sandbox.runner.SandboxRunner", FakeSandbox)
    monkeypatch.setattr("engine.llm.openai_client.create_llm_client", lambda settings: None)
    r = _cli("check", "generate", "a helpful answer", "--labels", "helpful", "--run", run)
    assert r.exit_code == 0, r.output
    # 30 % of each class held back: 12 of 40 passes and 12 of 40 fails
    assert "56 labelled rows as examples; 24 held back (--holdout 0.3 --holdout-seed 0)" in (
        r.output
    )
    examples = seen["examples"]
    assert isinstance(examples, list) and len(examples) == 56
    split = fetch_split(Remote("http://testserver", "k"), "helpful", run, 0.3, 0)
    held_rows = {h.row for h in split.held}
    shown = {int(e["row"]["model_output"].split()[-1]) for e in examples}
    assert len(held_rows) == 24 and not shown & held_rows  # never shown to the generator
    assert all(e["expected"] == human[int(e["row"]["model_output"].split()[-1])] for e in examples)
    # the report is on the held-back rows alone, with the check's verdicts on them
    fp = sum(1 for i in held_rows if not human[i] and verdict(f"row {i}"))
    run_rows = fake_runner(None)
    report = held_back_report(split, run, lambda rows: run_rows("", None, rows), 0)  # type: ignore[operator]
    assert report["n"] == 24
    assert report["confusion"]["matrix"] == [[12 - fp, fp], [0, 12]]
    assert "agreement on the 24 held-back rows:" in r.output
    assert "n = 24" in r.output and "verdict: too few labels" in r.output
    # both or neither
    bad = _cli("check", "generate", "x", "--labels", "helpful")
    assert bad.exit_code == 2 and "--labels NAME and --run RUN go together" in bad.output
