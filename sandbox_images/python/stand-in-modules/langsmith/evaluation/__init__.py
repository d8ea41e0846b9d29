"""``langsmith.evaluation``, as a stand-in: an evaluator's result types."""

from __future__ import annotations

from typing import Any

from _stand_in_model import _REQUIRED, _Model

__all__ = ["EvaluationResult", "EvaluationResults"]


class EvaluationResult(_Model):
    """One metric: ``key`` and ``score`` (or ``value``), with a ``comment``."""

    _fields = {
        "key": _REQUIRED,
        "score": None,
        "value": None,
        "metadata": None,
        "comment": None,
        "correction": None,
        "evaluator_info": {},
        "feedback_config": None,
        "source_run_id": None,
        "target_run_id": None,
        "extra": None,
    }


#: Several metrics: ``{"results": [EvaluationResult, ...]}`` (a TypedDict in LangSmith).
EvaluationResults = dict[str, Any]
