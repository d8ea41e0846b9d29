"""Labels taken in: a label name's type declared, and labels on run rows or spans checked
(the name declared, the value of its type, the row or span stored) and stored all or none."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine.calibration.labels import LabelType, declare, parse_value
from engine.errors import InvalidRequestError, NotFoundError
from engine.storage import Run, Store
from engine.storage.label_sql import Label, LabelName, LabelStore, NewLabel
from engine.storage.span_label_sql import span_label_queries


def label_type(name: LabelName) -> LabelType:
    """A stored name's type."""
    return LabelType(name.type, tuple(name.levels or ()))


@dataclass(frozen=True)
class LabelInput:
    """A label as a caller gives it, before its value and target are checked: on a run's
    row (``run``, ``row``) or on a span (``trace_id``, ``span_id``)."""

    name: str
    run: str | None
    row: int | None
    value: Any
    annotator: str
    comment: str | None = None
    trace_id: str | None = None
    span_id: str | None = None


def _spans_found(labels: LabelStore, tenant_id: str, given: Sequence[LabelInput]) -> None:
    """NotFoundError naming the first labelled span the tenant has not stored."""
    keys = [
        (item.trace_id.lower(), item.span_id.lower())
        for item in given
        if item.trace_id is not None and item.span_id is not None
    ]
    if not keys:
        return
    found = span_label_queries(labels.engine).existing(tenant_id, keys)
    for i, key in enumerate(keys):
        if key not in found:
            raise NotFoundError(
                f"labels[{i}]: span {key[1]!r} of trace {key[0]!r} not found: "
                "GET /v1/spans lists the spans received"
            )


def add_labels(
    store: Store, labels: LabelStore, tenant_id: str, given: Sequence[LabelInput]
) -> list[Label]:
    """Check every label (its name is declared, its value fits, its run row or span
    exists) and store them all, or none: the error names the label by its position."""
    types: dict[str, LabelType] = {}
    runs: dict[str, Run] = {}
    checked: list[NewLabel] = []
    _spans_found(labels, tenant_id, given)
    for i, item in enumerate(given):
        where = f"labels[{i}]"
        if item.name not in types:
            types[item.name] = label_type(labels.get_name(tenant_id, item.name))
        if item.trace_id is not None and item.span_id is not None:
            try:
                value = parse_value(types[item.name], item.value, item.name)
            except InvalidRequestError as exc:
                raise InvalidRequestError(f"{where}: {exc}") from exc
            checked.append(
                NewLabel(
                    item.name, None, None, value, item.annotator, item.comment,
                    item.trace_id.lower(), item.span_id.lower(),
                )
            )  # fmt: skip
            continue
        if item.run is None or item.row is None:
            raise InvalidRequestError(
                f'{where}: a target is {{"run", "row"}} or {{"trace_id", "span_id"}}'
            )
        if item.run not in runs:
            runs[item.run] = store.get_run(tenant_id, item.run)
        run = runs[item.run]
        if not 0 <= item.row < run.row_count:
            raise InvalidRequestError(
                f"{where}: run {run.id} has rows 0 to {run.row_count - 1}, not {item.row}"
            )
        try:
            value = parse_value(types[item.name], item.value, item.name)
        except InvalidRequestError as exc:
            raise InvalidRequestError(f"{where}: {exc}") from exc
        checked.append(NewLabel(item.name, run.id, item.row, value, item.annotator, item.comment))
    return labels.add_labels(tenant_id, checked)


def declare_name(
    labels: LabelStore, tenant_id: str, name: str, type_: str, levels: Sequence[Any] | None
) -> tuple[LabelName, bool]:
    """Declare a label name's type (checked); ``True`` when it was created or changed."""
    checked = declare(type_, levels)
    return labels.declare_name(tenant_id, name, checked.type, list(checked.levels) or None)
