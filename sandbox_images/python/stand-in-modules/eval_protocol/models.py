"""eval-protocol's ``eval_protocol.models`` (0.3.33), as a stand-in: result and message types."""

from __future__ import annotations

from _stand_in_model import _REQUIRED, _Model

__all__ = ["EvaluateResult", "Message", "MetricResult", "StepOutput"]


class Message(_Model):
    """One chat message (OpenAI's shape, with eval-protocol's extra fields)."""

    _fields = {
        "role": _REQUIRED,
        "content": "",
        "reasoning_content": None,
        "name": None,
        "tool_call_id": None,
        "tool_calls": None,
        "function_call": None,
        "control_plane_step": None,
        "weight": None,
        "logprobs": None,
    }


class MetricResult(_Model):
    """One named sub-score with its ``reason`` and free ``data`` (any score: no 0..1 cap)."""

    _fields = {"is_score_valid": True, "score": _REQUIRED, "reason": _REQUIRED, "data": {}}


class StepOutput(_Model):
    """One step's base reward in a rollout (reinforcement learning)."""

    _fields = {
        "step_index": _REQUIRED,
        "base_reward": _REQUIRED,
        "terminated": False,
        "control_plane_info": None,
        "metrics": {},
        "reason": None,
    }


class EvaluateResult(_Model):
    """An evaluator's result: ``score``, ``reason``, named ``metrics`` and rollout fields."""

    _fields = {
        "score": _REQUIRED,
        "is_score_valid": True,
        "reason": None,
        "metrics": {},
        "step_outputs": None,
        "error": None,
        "trajectory_info": None,
        "final_control_plane_info": None,
        "agg_score": None,
        "standard_error": None,
    }
