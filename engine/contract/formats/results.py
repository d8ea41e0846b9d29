"""What a return value becomes: the pieces every format's coercion shares (a JSON-safe copy
of objects, bounded metadata, the explanation's length, sub-scores). Carried into the
sandbox image (stdlib only).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from engine.contract.formats.spec import FormatSpec
from engine.contract.returns import InvalidScore, Score, coerce_score
from engine.contract.statuses import MAX_EXPLANATION_CHARS, OutputType

#: Longest result metadata (sub-scores, a format's extra keys) kept, as JSON characters.
MAX_METADATA_CHARS = 16384


def bounded_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """JSON-safe metadata within :data:`MAX_METADATA_CHARS`, or a note that it was dropped."""
    if not metadata:
        return None
    safe = jsonable(dict(metadata))
    size = len(json.dumps(safe, ensure_ascii=False))
    if size > MAX_METADATA_CHARS:
        return {"metadata_dropped": f"{size} characters of metadata, over {MAX_METADATA_CHARS}"}
    return safe  # type: ignore[no-any-return]


def field_of(value: Any, name: str) -> Any:
    """``value[name]`` for a mapping, else its attribute ``name`` (None when absent)."""
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def jsonable(value: Any, depth: int = 0) -> Any:
    """A JSON-safe copy of ``value`` (objects become their fields or their repr)."""
    if depth > 8:
        return repr(value)[:200]
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v, depth + 1) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return jsonable(dump(), depth + 1)
    fields = getattr(value, "__dict__", None)
    if isinstance(fields, dict):
        return {k: jsonable(v, depth + 1) for k, v in fields.items() if not k.startswith("_")}
    return repr(value)[:200]


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    if len(text) > MAX_EXPLANATION_CHARS:
        text = text[: MAX_EXPLANATION_CHARS - 3] + "..."
    return text


def finish(
    score: Any,
    expected: OutputType | None,
    *,
    explanation: Any = None,
    passed: Any = None,
    metadata: dict[str, Any] | None = None,
) -> Score:
    """The :class:`Score` of a format's result, its score checked as an Okareo score is."""
    base = coerce_score(score, expected)
    if passed is not None and not isinstance(passed, bool):
        raise InvalidScore(f"`pass` must be true or false, got {type(passed).__name__}")
    return Score(base.score, base.output_type, _text(explanation), metadata or None, passed)


def refuse_none(spec: FormatSpec, value: Any) -> None:
    """:class:`InvalidScore` when the entry returned None (scorebox keeps a score per row)."""
    if value is None:
        raise InvalidScore(
            f"the {spec.title} returned None: return a score (scorebox keeps one per row)"
        )


def sub_scores(entries: Mapping[str, Any]) -> dict[str, Any]:
    """Named sub-scores (numbers, or objects with score/pass/reason...) as JSON."""
    out: dict[str, Any] = {}
    for name, entry in entries.items():
        if isinstance(entry, bool | int | float):
            out[str(name)] = {"score": entry}
            continue
        fields = {
            k: jsonable(field_of(entry, k))
            for k in ("score", "pass", "reason", "is_score_valid", "success", "data")
            if field_of(entry, k) is not None
        }
        out[str(name)] = fields or jsonable(entry)
    return out
