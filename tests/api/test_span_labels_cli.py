"""``scorebox labels import|export`` of labels on spans and ``scorebox check agreement
--rule`` against the app (in process, SQLite and PostgreSQL)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from tests.api.conftest import Api
from tests.api.test_labels_cli import _cli, cli  # noqa: F401 (cli: the fixture)
from tests.api.test_span_labels import HAND_MATRIX, N_SPANS, _spans
from tests.online.score_rows import add_scores, make_rule


def test_import_spans_without_a_run_then_export(
    cli: tuple[Api, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    api, _ = cli
    keys = _spans(api, {}, 2)
    lines = [
        {"trace_id": keys[0][0], "span_id": keys[0][1], "value": True, "annotator": "ana"},
        {"trace_id": keys[1][0], "span_id": keys[1][1], "value": "no", "comment": "rude"},
    ]
    (tmp_path / "spans.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = _cli(
        "labels", "import", str(tmp_path / "spans.jsonl"), "--name", "helpful", "--type", "bool",
        "--annotator", "bob",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "imported 2 labels of 'helpful' on spans" in r.output
    out = tmp_path / "out.csv"
    r = _cli("labels", "export", "--trace", keys[1][0], "-o", str(out))
    assert r.exit_code == 0, r.output
    (row,) = list(csv.DictReader(out.open()))
    assert (row["trace_id"], row["span_id"], row["value"], row["annotator"], row["comment"]) == (
        keys[1][0], keys[1][1], "false", "bob", "rude",
    )  # fmt: skip
    assert row["run"] == "" and row["row"] == ""
    # the export imports again as it is, with no --run
    r = _cli("labels", "import", str(out), "--name", "helpful")
    assert r.exit_code == 0 and "imported 1 labels" in r.output, r.output
    (tmp_path / "rows.csv").write_text("row,value\n0,yes\n")
    r = _cli("labels", "import", str(tmp_path / "rows.csv"), "--name", "helpful")
    assert r.exit_code == 1 and "give --run RUN" in r.output


def test_check_agreement_over_a_rule(cli: tuple[Api, str], tmp_path: Path) -> None:  # noqa: F811
    api, tid = cli
    keys = _spans(api, {}, N_SPANS)
    add_scores(
        api.store.engine, tid, make_rule(api.store.engine, tid, name="tone"), N_SPANS, spans=keys
    )
    (tmp_path / "l.csv").write_text(
        "trace_id,span_id,value\n"
        + "".join(f"{t},{s},{i % 3 != 0}\n" for i, (t, s) in enumerate(keys))
    )
    r = _cli("labels", "import", str(tmp_path / "l.csv"), "--name", "helpful", "--type", "bool")
    assert r.exit_code == 0, r.output
    r = _cli(
        "check", "agreement", "is_helpful@3", "--labels", "helpful", "--rule", "tone",
        "--min-per-class", "3", "--json",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["rule"] == "tone" and report["confusion"]["matrix"] == HAND_MATRIX
    api_report = api.client.get(
        "/v1/agreement",
        params={"check": "is_helpful@3", "labels": "helpful", "rule": "tone", "min_per_class": 3},
    ).json()
    assert report == api_report
    missing = _cli("check", "agreement", "is_helpful@3", "--labels", "helpful", "--rule", "nope")
    assert missing.exit_code != 0 and "rule 'nope'" in missing.output
