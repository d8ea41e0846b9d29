"""reward-kit's ``reward_kit.models`` (0.4.1), as a stand-in: the result and message types.

Fields and defaults as the real pydantic models declare them; construction by keyword,
attribute and dict-style access, ``model_dump``.
"""

from __future__ import annotations

from typing import Any

from _stand_in_model import _REQUIRED, _Model

__all__ = ["EvaluateResult", "Message", "MetricResult", "StepOutput"]


class Message(_Model):
    """One chat message (OpenAI's shape)."""

    _fields = {
        "role": _REQUIRED,
        "content": "",
        "name": None,
        "tool_call_id": None,
        "tool_calls": None,
        "function_call": None,
    }


class MetricResult(_Model):
    """One named sub-score: ``score`` in 0..1 and the ``reason`` for it."""

    _fields = {"is_score_valid": True, "score": _REQUIRED, "reason": _REQUIRED}

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        score = self.score
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1:
            raise ValueError(f"MetricResult.score must be a number in 0..1, got {score!r}")


class StepOutput(_Model):
    """One step's base reward in a rollout (reinforcement learning)."""

    _fields = {"step_index": _REQUIRED, "base_reward": _REQUIRED, "metrics": {}, "reason": None}


class EvaluateResult(_Model):
    """A reward function's result: ``score``, ``reason`` and named ``metrics``."""

    _fields = {
        "score": _REQUIRED,
        "is_score_valid": True,
        "reason": None,
        "metrics": {},
        "step_outputs": None,
        "error": None,
    }
