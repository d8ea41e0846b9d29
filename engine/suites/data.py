"""Reading rows for ``scorebox run``: .jsonl/.ndjson, .json, .csv, .tsv, .parquet.

Every problem names the file, the line (or row) and the expected columns; columns
that are not row fields are reported (map them with ``--map FIELD=COLUMN``), never
silently dropped.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

from engine.errors import InvalidRequestError
from engine.row_errors import expected, shape_problem
from engine.suites.file import RowField

#: The row fields a data file's columns may name (scorebox.yaml's ``map`` keys too).
ROW_FIELDS: tuple[str, ...] = get_args(RowField)
#: Fields that hold JSON: a CSV/TSV cell holding them is parsed.
JSON_FIELDS = ("metadata", "messages", "item", "sample", "vars")
#: The row errors' wording is the API's too (:mod:`engine.row_errors`).
EXPECTED = expected("column")
SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".parquet")


def _apply(
    path: Path, where: str, record: Mapping[str, Any], mapping: Mapping[str, str]
) -> dict[str, Any]:
    renamed = {column: field for field, column in mapping.items()}
    row: dict[str, Any] = {renamed.get(key, key): value for key, value in record.items()}
    problem = shape_problem(row, "column")
    if problem is not None:
        unknown = sorted(str(key) for key in row if key not in ROW_FIELDS)
        hint = (
            ". Rename them, or map them with --map FIELD=COLUMN "
            f"(e.g. --map model_output={unknown[0]})"
            if unknown
            else ""
        )
        raise InvalidRequestError(f"{path}:{where}: {problem}{hint}")
    for name in JSON_FIELDS:
        value = row.get(name)
        if isinstance(value, str):
            try:
                row[name] = json.loads(value)
            except json.JSONDecodeError as exc:
                raise InvalidRequestError(f"{path}:{where}: {name} is not JSON: {exc.msg}") from exc
    return row


def _delimited(path: Path, text: str, delimiter: str) -> list[tuple[str, dict[str, Any]]]:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    out: list[tuple[str, dict[str, Any]]] = []
    try:
        header = next(reader, None)
        if header is None:
            return out
        for cells in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in cells):
                continue
            if len(cells) != len(header):
                raise InvalidRequestError(
                    f"{path}:{line}: {len(cells)} cells, the header has {len(header)} "
                    f"({', '.join(header)}); an unescaped delimiter or quote?"
                )
            record = {
                k: v for k, v in zip(header, cells, strict=True) if v != "" or k == "model_output"
            }
            out.append((str(line), record))
    except csv.Error as exc:
        # strict: an unterminated quote is "unexpected end of data", not one long cell
        raise InvalidRequestError(
            f"{path}:{reader.line_num}: not valid {'TSV' if delimiter == chr(9) else 'CSV'}: {exc}"
        ) from exc
    return out


def read_rows(path: Path, mapping: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Validated rows of a data file (see the module docstring)."""
    mapping = mapping or {}
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise InvalidRequestError(
            f"{path}: unknown data format {suffix or '(no suffix)'!r}; "
            f"use one of {', '.join(SUFFIXES)}"
        )
    records = _parquet_records(path) if suffix == ".parquet" else _text_records(path, suffix)
    rows: list[dict[str, Any]] = []
    for where, record in records:
        if not isinstance(record, dict):
            raise InvalidRequestError(f"{path}:{where}: {shape_problem(record, 'column')}")
        rows.append(_apply(path, where, record, mapping))
    return rows


def _parquet_records(path: Path) -> list[tuple[str, Any]]:
    try:
        import pandas  # noqa: PLC0415 (optional, and lazy: keeps scorebox --help fast)
    except ImportError as exc:
        raise InvalidRequestError(
            f"{path}: reading .parquet needs pandas and pyarrow: pip install pandas pyarrow"
        ) from exc
    frame = pandas.read_parquet(path)
    return [
        (f"row {i + 1}", {k: v for k, v in r.items() if v is not None})
        for i, r in enumerate(frame.to_dict(orient="records"))
    ]


def _text_records(path: Path, suffix: str) -> list[tuple[str, Any]]:
    """The records of a CSV, TSV, JSON or JSONL file, each with where it stands."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequestError(f"{path}: not UTF-8 text: {exc}") from exc
    if suffix in (".csv", ".tsv"):
        return list(_delimited(path, text, "\t" if suffix == ".tsv" else ","))
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidRequestError(
                f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}"
            ) from exc
        if not isinstance(data, list):
            raise InvalidRequestError(f"{path}: expected a JSON list of row objects")
        return [(f"item {i}", item) for i, item in enumerate(data)]
    records: list[tuple[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append((str(number), json.loads(line)))
        except json.JSONDecodeError as exc:
            raise InvalidRequestError(
                f"{path}:{number}: not JSON: {exc.msg} (one JSON object per line)"
            ) from exc
    return records
