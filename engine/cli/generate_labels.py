"""``scorebox check generate --labels NAME --run RUN``: human labels as the generator's
examples, with part of them held back and the generated check's agreement reported on it.

The split is :mod:`engine.calibration.holdout`'s (seeded, per label value), the same
that ``scorebox labels examples`` and ``--holdout`` on ``scorebox check agreement`` use,
so the held-back rows are rows the generator never saw. Repair learns from the rows the
check and the labels disagree on among the examples (the training part); the held-back
rows only ever reach the sandbox, and the report is made again on them for the repaired
check, beside the first one's (:func:`repair_figures`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import click

from engine.cli.remote import Remote
from engine.contract import Status
from engine.models import Row, RowResult

#: A run's row fields the generator's examples carry.
INPUTS = ("model_output", "scenario_input", "scenario_result")


@dataclass(frozen=True)
class HeldBack:
    """One held-back row: its inputs and every person's label on it."""

    row: int
    inputs: dict[str, Any]
    labels: list[tuple[str, Any]]


@dataclass(frozen=True)
class LabelledSplit:
    """The examples the generator sees, the rows held back, and the label's declared type."""

    label_name: str
    label_type: str
    levels: tuple[Any, ...]
    examples: list[dict[str, Any]]
    held: list[HeldBack]


def fetch_split(
    remote: Remote, label_name: str, run_id: str, holdout: float, seed: int
) -> LabelledSplit:
    """The run's rows labelled ``label_name``, split: the majority label of each row not
    held back becomes an example's ``expected``; the held-back rows keep every label."""
    from engine.calibration.holdout import held_out, majorities  # noqa: PLC0415 (lazy)
    from engine.cli.labels import _all_labels  # noqa: PLC0415 (lazy)

    names = {n["name"]: n for n in remote.json("GET", "/v1/label-names")}
    if label_name not in names:
        raise click.ClickException(
            f"label name {label_name!r} is not declared: declare it (PUT "
            f"/v1/label-names/{label_name}, or scorebox labels import --type) and label rows"
        )
    declared = names[label_name]
    found = _all_labels(remote, {"name": label_name, "run": run_id, "limit": 10_000})
    given: dict[int, list[tuple[str, Any]]] = defaultdict(list)
    for label in found:
        given[int(label["target"]["row"])].append((str(label["annotator"]), label["value"]))
    votes = majorities((x["target"]["run"], x["target"]["row"], x["value"]) for x in found)
    if not votes:
        raise click.ClickException(
            f"run {run_id} has no rows labelled {label_name!r} with a majority: label some "
            "first (scorebox labels import, or the dashboard's queue)"
        )
    try:
        kept = held_out(votes, holdout, seed)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--holdout") from exc
    response = remote.request(
        "GET", f"/v1/runs/{run_id}/results", headers={"Accept": "application/x-ndjson"}
    )
    inputs: dict[int, dict[str, Any]] = {}
    for line in response.text.splitlines():
        record = json.loads(line)
        inputs.setdefault(
            int(record["row_index"]), {k: record[k] for k in INPUTS if record.get(k) is not None}
        )
    examples = [
        {"row": inputs.get(row, {}), "expected": votes[(rid, row)]}
        for rid, row in sorted(votes)
        if (rid, row) not in kept
    ]
    held = [HeldBack(row, inputs.get(row, {}), given[row]) for _, row in sorted(kept)]
    return LabelledSplit(
        label_name,
        str(declared["type"]),
        tuple(declared.get("levels") or ()),
        examples,
        held,
    )


RunSource = Callable[[Sequence[Row]], list[RowResult]]

#: The figures :func:`repair_figures` compares, the first a report has.
HEADLINE = ("kappa", "accuracy", "spearman", "mae")


def held_back_report(
    split: LabelledSplit, run_id: str, run_rows: RunSource, seed: int = 0
) -> dict[str, Any]:
    """The agreement report (the same as ``GET /v1/agreement``'s) of the generated check,
    scored by ``run_rows``, against the labels of the held-back rows alone."""
    from engine.calibration.report import (  # noqa: PLC0415 (lazy: numpy, scipy)
        LabelledItem,
        LabelSpec,
        ReportOptions,
        agreement_report,
    )

    rows = [Row.model_validate({"model_output": "", **h.inputs}) for h in split.held]
    results = run_rows(rows) if rows else []
    items = []
    for h, result in zip(split.held, results, strict=True):
        ok = result.status == Status.OK
        items.append(
            LabelledItem(
                target={"run": run_id, "row": h.row},
                labels=h.labels,
                score=result.score if ok else None,
                passed=getattr(result, "passed", None) if ok else None,
            )
        )
    spec = LabelSpec(split.label_name, split.label_type, split.levels)
    report = agreement_report(items, spec, ReportOptions(seed=seed))
    return {"check": "the generated check", "run": run_id, **report}


def repair_figures(before: dict[str, Any], after: dict[str, Any]) -> str:
    """One line comparing two held-back reports (the first check and the repaired one) by
    their first figure of :data:`HEADLINE`, with its interval."""

    def figure(report: dict[str, Any], name: str) -> str:
        fig = report.get(name) or {}
        if fig.get("value") is None:
            return "n/a"
        lo, hi = fig.get("ci") or (None, None)
        return f"{fig['value']:.3f}" + ("" if lo is None else f" [{lo:.3f}, {hi:.3f}]")

    name = next((n for n in HEADLINE if n in after or n in before), "accuracy")
    return f"{name}: {figure(before, name)} before repair, {figure(after, name)} after"
