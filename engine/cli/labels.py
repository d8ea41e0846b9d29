"""``scorebox labels import|export``: human labels on a run's rows or on received spans,
from and to files.

A file is CSV (columns ``row``, ``value``, and optionally ``annotator`` and ``comment``)
or JSON lines (the same keys), keyed by the row's index in the run; or, for spans, with
the columns ``trace_id`` and ``span_id`` in place of ``row``. Labels go to the server in
batches; every one is checked there against the label name's type.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from engine.cli.remote import Remote, with_remote

BATCH = 5000
#: The row fields a generator example carries (those of the results' NDJSON export).
INPUTS = ("model_output", "scenario_input", "scenario_result")
EXPORT_COLUMNS = (
    "run", "row", "name", "value", "annotator", "comment", "created_at", "trace_id", "span_id",
)  # fmt: skip
#: The columns of the file's target: a run's row, or a span.
SPAN_KEYS = ("trace_id", "span_id")


def _levels(text: str | None) -> list[Any] | None:
    if not text:
        return None
    out: list[Any] = []
    for raw in text.split(","):
        part = raw.strip()
        try:
            number = float(part)
        except ValueError:
            out.append(part)
            continue
        out.append(int(number) if number.is_integer() else number)
    return out


def read_label_file(path: Path) -> Iterator[dict[str, Any]]:
    """The file's labels as ``{"row", "value", "annotator"?, "comment"?}``; the error names
    the line to fix."""
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise click.ClickException(f"{path}:{number}: not JSON ({exc.msg})") from exc
            if not isinstance(record, dict):
                raise click.ClickException(f"{path}:{number}: give an object with row and value")
            yield _label_record(record, f"{path}:{number}")
    elif path.suffix.lower() in (".csv", ".tsv"):
        delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
        reader = csv.DictReader(io.StringIO(text), delimiter=delimiter)
        fields = set(reader.fieldnames or ())
        if "value" not in fields or not ("row" in fields or set(SPAN_KEYS) <= fields):
            raise click.ClickException(
                f"{path}: the header must name the columns row and value, or trace_id, "
                f"span_id and value (and optionally annotator, comment); it has "
                f"{reader.fieldnames}"
            )
        for number, record in enumerate(reader, start=2):
            yield _label_record(record, f"{path}:{number}")
    else:
        raise click.ClickException(f"{path}: use a .csv, .tsv or .jsonl file")


def _label_record(record: dict[str, Any], where: str) -> dict[str, Any]:
    if record.get("trace_id") not in (None, "") and record.get("span_id") not in (None, ""):
        if "value" not in record:
            raise click.ClickException(f"{where}: give trace_id, span_id and value")
        span = {k: str(record[k]) for k in SPAN_KEYS}
        return {**span, **_extras(record)}
    if record.get("row") in (None, "") or "value" not in record:
        raise click.ClickException(f"{where}: give row and value (or trace_id, span_id, value)")
    try:
        row = int(record["row"])
    except (TypeError, ValueError):
        raise click.ClickException(
            f"{where}: row {record['row']!r} is not a row index (0, 1, 2...)"
        ) from None
    return {"row": row, **_extras(record)}


def _extras(record: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"value": record["value"]}
    for key in ("annotator", "comment"):
        if record.get(key) not in (None, ""):
            out[key] = str(record[key])
    return out


@click.group("labels")
def labels() -> None:
    """Human labels on run rows and spans: import and export (see docs/calibration.md)."""


@labels.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--name", required=True, help="The label name, e.g. helpful.")
@click.option(
    "--run",
    "run_id",
    default=None,
    help="The run whose rows the file labels (not needed for a file of spans).",
)
@click.option(
    "--type",
    "type_",
    type=click.Choice(["bool", "ordinal", "float", "category"]),
    default=None,
    help="Declare the name's type first (once; the same type again is fine).",
)
@click.option("--levels", default=None, help="Ordinal or category levels, in order: 1,2,3,4,5.")
@click.option("--annotator", default=None, help="For rows of the file that name none.")
@with_remote
def import_labels(
    file: Path,
    name: str,
    run_id: str | None,
    type_: str | None,
    levels: str | None,
    annotator: str | None,
    remote: Remote,
) -> None:
    """Import labels from FILE (CSV or JSON lines: row, value, annotator, comment; or
    trace_id and span_id in place of row, for spans)."""
    records = list(read_label_file(file))
    if run_id is None and any("row" in r for r in records):
        raise click.ClickException(
            f"{file}: its labels name rows: give --run RUN, the run they belong to"
        )
    if type_ is not None:
        remote.json(
            "PUT", f"/v1/label-names/{name}", json={"type": type_, "levels": _levels(levels)}
        )
    stored = 0
    for start in range(0, len(records), BATCH):
        batch = []
        for record in records[start : start + BATCH]:
            if "row" in record:
                target: dict[str, Any] = {"run": run_id, "row": record["row"]}
            else:
                target = {k: record[k] for k in SPAN_KEYS}
            rest = {k: v for k, v in record.items() if k not in ("row", *SPAN_KEYS)}
            item = {"target": target, "name": name, **rest}
            if "annotator" not in item and annotator:
                item["annotator"] = annotator
            batch.append(item)
        stored += len(remote.json("POST", "/v1/labels", json={"labels": batch})["labels"])
    where = f"on run {run_id}" if run_id is not None else "on spans"
    click.echo(f"imported {stored} labels of {name!r} {where}")


@labels.command("export")
@click.option("--name", default=None, help="Only this label name.")
@click.option("--run", "run_id", default=None, help="Only this run's rows.")
@click.option("--trace", "trace_id", default=None, help="Only this trace's spans.")
@click.option("--annotator", default=None, help="Only this annotator's labels.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A .csv or .jsonl file (default: JSON lines on stdout).",
)
@with_remote
def export_labels(
    name: str | None,
    run_id: str | None,
    trace_id: str | None,
    annotator: str | None,
    output: Path | None,
    remote: Remote,
) -> None:
    """Export labels, one per line, every annotator's kept apart."""
    params: dict[str, Any] = {"limit": 10_000}
    wanted = (("name", name), ("run", run_id), ("trace_id", trace_id), ("annotator", annotator))
    for key, value in wanted:
        if value is not None:
            params[key] = value
    rows: list[dict[str, Any]] = []
    offset = 0
    while True:
        page = remote.json("GET", "/v1/labels", params={**params, "offset": offset})["labels"]
        rows += [
            {
                "run": x["target"].get("run"),
                "row": x["target"].get("row"),
                **{k: x[k] for k in EXPORT_COLUMNS[2:7]},
                "trace_id": x["target"].get("trace_id"),
                "span_id": x["target"].get("span_id"),
            }
            for x in page
        ]
        if len(page) < params["limit"]:
            break
        offset += len(page)
    if output is not None and output.suffix.lower() == ".csv":
        with output.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=EXPORT_COLUMNS)
            writer.writeheader()
            for r in rows:
                writer.writerow({**r, "value": json.dumps(r["value"])})
    else:
        text = "".join(json.dumps(r) + "\n" for r in rows)
        if output is None:
            click.echo(text, nl=False)
        else:
            output.write_text(text, encoding="utf-8")
    if output is not None:
        click.echo(f"wrote {len(rows)} labels to {output}", err=True)


@labels.command("corrected")
@click.argument("run_id")
@click.option("--labels", "label_name", required=True, help="The label name, e.g. helpful.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@with_remote
def corrected(run_id: str, label_name: str, as_json: bool, remote: Remote) -> None:
    """A run's pass rates, measured and corrected for each check's TPR and TNR (Rogan-Gladen)."""
    body = remote.json(
        "GET", f"/v1/runs/{run_id}/corrected-pass-rates", params={"labels": label_name}
    )
    if as_json:
        click.echo(json.dumps(body, indent=2))
        return
    click.echo(f"run {run_id}, pass rates corrected by the labels {label_name!r}")
    for c in body["checks"]:
        measured = "n/a" if c["measured"] is None else f"{c['measured']:.3f}"
        line = f"  {c['check']}: measured {measured} of {c['scored']}"
        fixed = c["corrected"]
        if fixed is not None:
            lo, hi = fixed["ci"]
            line += f", corrected {fixed['value']:.3f} [{lo:.3f}, {hi:.3f}]"
        else:
            line += f", not corrected: {c['reason']}"
        click.echo(line)


def _all_labels(remote: Remote, params: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    while True:
        page = remote.json("GET", "/v1/labels", params={**params, "offset": len(out)})["labels"]
        out += page
        if len(page) < params["limit"]:
            return out


@labels.command("examples")
@click.option("--name", "label_name", required=True, help="The label name, e.g. helpful.")
@click.option("--run", "run_id", required=True, help="The labelled run.")
@click.option(
    "--holdout",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.3,
    show_default=True,
    help="The share of labelled rows held back (per label value) to measure agreement on.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="The hold-out's seed.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="The generator's examples (JSON lines), for `scorebox check generate --examples`.",
)
@with_remote
def examples(
    label_name: str, run_id: str, holdout: float, seed: int, output: Path, remote: Remote
) -> None:
    """Labelled rows as the generator's examples, holding back part of them.

    Each row's majority label is its expected outcome. The rows held back are written
    nowhere: after `scorebox check generate ... --examples FILE`, push the check, run it on
    the run's rows, and `scorebox check agreement NAME --labels L --run RUN --holdout H
    --holdout-seed S` reports on the held-back rows alone (the same seeded split).
    """
    from engine.calibration.holdout import held_out, majorities  # noqa: PLC0415 (lazy)

    found = _all_labels(remote, {"name": label_name, "run": run_id, "limit": 10_000})
    votes = majorities((x["target"]["run"], x["target"]["row"], x["value"]) for x in found)
    if not votes:
        raise click.ClickException(
            f"run {run_id} has no rows labelled {label_name!r} with a majority: label some "
            "first (scorebox labels import, or the dashboard's queue)"
        )
    kept = held_out(votes, holdout, seed)
    train = sorted(t for t in votes if t not in kept)
    response = remote.request(
        "GET", f"/v1/runs/{run_id}/results", headers={"Accept": "application/x-ndjson"}
    )
    inputs: dict[int, dict[str, Any]] = {}
    for line in response.text.splitlines():
        record = json.loads(line)
        inputs.setdefault(
            int(record["row_index"]),
            {k: record[k] for k in INPUTS if record.get(k) is not None},
        )
    with output.open("w", encoding="utf-8") as f:
        for _, row in train:
            f.write(json.dumps({"row": inputs.get(row, {}), "expected": votes[(run_id, row)]}))
            f.write("\n")
    click.echo(
        f"wrote {len(train)} examples to {output}; held back {len(kept)} rows "
        f"(--holdout {holdout:g} --holdout-seed {seed})",
        err=True,
    )
