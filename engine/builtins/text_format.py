"""Cohere's format and length checks (the summarization-evals cookbook). Pure.

An *item* is a bullet or a paragraph. Bullets are lines starting (after spaces
or tabs) with ``-``, ``*``, ``+``, ``•`` or a number followed by ``.``, then
whitespace, then text holding at least one letter or digit. Paragraphs are the
non-blank lines. Parameters a check reference leaves out are read from the
row's metadata under Cohere's ``eval_metadata`` keys (``format``,
``min_length``, ``max_length``, ``number``), so one reference can score rows
that each ask for something else.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine.builtins.base import BuiltinCheck, Outcome, SkipRow, per_row
from engine.contract import OutputType
from engine.models import Row

FormatType = Literal["bullets", "paragraphs"]

# Cohere's _extract_markdown_bullets, verbatim: a line that starts with -, *, +, • or
# "N." and has a word character after it (no space needed after the marker).
_BULLET_LINE = re.compile(r"^[ \t]*(?:[-*+•]|[\d]+\.).*\w+.*$", re.MULTILINE)
_BULLET = re.compile(r"^[ \t]*(?:[-*+•]|[\d]+\.)(.*\w+.*)$", re.MULTILINE)


def bullets(text: str) -> list[str]:
    """The text of every bullet line (marker removed), in order (Cohere's extractor)."""
    return [m.group(1) for m in _BULLET.finditer(text) if m.group(1).strip()]


def paragraphs(text: str) -> list[str]:
    """The non-blank lines (Cohere: ``completion.split("\\n")`` without blank items)."""
    return [line for line in text.split("\n") if line.strip()]


def is_only_bullets(text: str) -> bool:
    """Cohere's ``_is_only_bullets``: nothing but whitespace is left once every bullet
    line is removed (so an empty text counts, as in the published code)."""
    for line in _BULLET_LINE.findall(text):
        text = text.replace(line, "")
    return text.strip() == ""


def is_only_paragraphs(text: str) -> bool:
    """Cohere's ``_is_only_paragraphs``: no line is a bullet."""
    return not _BULLET_LINE.findall(text)


class FormatParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    format_type: FormatType | None = Field(
        default=None,
        description="bullets or paragraphs; default: the row's metadata['format'].",
    )


def _format_type(row: Row, given: FormatType | None) -> FormatType:
    value: Any = given if given is not None else row.metadata.get("format")
    if value not in ("bullets", "paragraphs"):
        raise SkipRow(
            "no format to check: set params.format_type or metadata.format to "
            "'bullets' or 'paragraphs'"
        )
    return value  # type: ignore[no-any-return]


def _format(row: Row, params: FormatParams) -> Outcome:
    kind = _format_type(row, params.format_type)
    if kind == "bullets":
        ok = is_only_bullets(row.model_output)
        return Outcome(ok, None if ok else "not only bullets (every non-blank line must be one)")
    ok = is_only_paragraphs(row.model_output)
    if ok:
        return Outcome(True)
    return Outcome(False, "empty" if not row.model_output.strip() else "contains bullets")


class LengthParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    format_type: FormatType | None = Field(
        default=None,
        description="How to split items: bullets or paragraphs; default: metadata['format'].",
    )
    min_words: int | None = Field(
        default=None, ge=0, description="Fewest words per item; default: metadata['min_length']."
    )
    max_words: int | None = Field(
        default=None, ge=0, description="Most words per item; default: metadata['max_length']."
    )
    number: int | None = Field(
        default=None, ge=1, description="Exact item count; default: metadata['number']."
    )

    @model_validator(mode="after")
    def _ordered(self) -> LengthParams:
        if (
            self.min_words is not None
            and self.max_words is not None
            and self.min_words > self.max_words
        ):
            raise ValueError("min_words is greater than max_words")
        return self


def _int_or_none(value: Any, key: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SkipRow(f"metadata.{key} must be a non-negative integer, got {value!r}")
    return value


def _length(row: Row, params: LengthParams) -> Outcome:
    kind = _format_type(row, params.format_type)
    meta = row.metadata
    low = (
        params.min_words
        if params.min_words is not None
        else _int_or_none(meta.get("min_length"), "min_length")
    )
    high = (
        params.max_words
        if params.max_words is not None
        else _int_or_none(meta.get("max_length"), "max_length")
    )
    number = (
        params.number if params.number is not None else _int_or_none(meta.get("number"), "number")
    )
    if low is None and high is None and number is None:
        raise SkipRow("nothing to check: set min_words, max_words or number (params or metadata)")
    items = bullets(row.model_output) if kind == "bullets" else paragraphs(row.model_output)
    if number is not None and len(items) != number:
        return Outcome(False, f"{len(items)} {kind}, expected {number}")
    for index, item in enumerate(items, start=1):
        words = len(item.split())
        if (low is not None and words < low) or (high is not None and words > high):
            bounds = f"{low if low is not None else 0}..{high if high is not None else '∞'}"
            return Outcome(False, f"item {index} has {words} words, expected {bounds}")
    # Cohere's score_length: no items and no `number` passes (nothing is out of bounds)
    return Outcome(True, f"{len(items)} {kind}")


def format_builtins() -> list[BuiltinCheck[Any]]:
    """Cohere's ``format`` and ``length`` checks."""
    return [
        BuiltinCheck(
            "format",
            "Whether model_output is only bullets (-, *, +, •, 1.) or only paragraphs "
            "(no bullets), per Cohere's summarization evals.",
            OutputType.BOOL,
            FormatParams,
            per_row(_format),
        ),
        BuiltinCheck(
            "length",
            "Whether every item (bullet or paragraph) has min..max words and, when set, the "
            "item count is exact, per Cohere's summarization evals.",
            OutputType.BOOL,
            LengthParams,
            per_row(_length),
        ),
    ]
