"""A small stand-in for reward-kit inside the scorebox sandbox.

``from reward_kit import reward_function, EvaluateResult, MetricResult, Message``
resolves here unless the check declares the real package, whose directory comes
first on ``sys.path`` (this one is appended last by the harness). It carries the
names a reward function uses, not reward-kit's deployment machinery.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["EvaluateResult", "Message", "MetricResult", "RewardFunction", "reward_function"]
__version__ = "0.0.0+scorebox.stand-in"


class _Model:
    """Keyword construction, attribute and dict-style access, ``model_dump``."""

    _fields: dict[str, Any] = {}

    def __init__(self, **values: Any) -> None:
        unknown = set(values) - set(self._fields)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field(s) {', '.join(sorted(unknown))}")
        for name, default in self._fields.items():
            if name not in values and default is _REQUIRED:
                raise TypeError(f"{type(self).__name__} needs `{name}`")
            value = values.get(name, default)
            setattr(self, name, dict(value) if isinstance(value, dict) else value)

    def __getitem__(self, key: str) -> Any:
        if key not in self._fields:
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default) if key in self._fields else default

    def __contains__(self, key: object) -> bool:
        return key in self._fields

    def keys(self) -> list[str]:
        return list(self._fields)

    def model_dump(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self._fields:
            value = getattr(self, name)
            if isinstance(value, _Model):
                value = value.model_dump()
            elif isinstance(value, dict):
                value = {
                    k: v.model_dump() if isinstance(v, _Model) else v for k, v in value.items()
                }
            elif isinstance(value, list):
                value = [v.model_dump() if isinstance(v, _Model) else v for v in value]
            out[name] = value
        return out

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._fields)
        return f"{type(self).__name__}({fields})"


_REQUIRED = object()


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


def reward_function(_func: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Mark a reward function (``@reward_function`` or ``@reward_function(mode=...)``).

    Like reward-kit, it refuses a function without ``**kwargs``. The function is
    returned unchanged: scorebox binds its arguments and reads its result.
    """

    def mark(func: Callable[..., Any]) -> Callable[..., Any]:
        code = func.__code__
        if not code.co_flags & 0x08:  # CO_VARKEYWORDS
            raise ValueError(
                f"reward function {func.__name__} must accept **kwargs (reward-kit requires it)"
            )
        func._reward_function = dict(options)  # type: ignore[attr-defined]
        return func

    return mark(_func) if _func is not None else mark


class RewardFunction:
    """reward-kit's wrapper class, for files that import it: calls a local function."""

    def __init__(self, func: Callable[..., Any], **options: Any) -> None:
        self.func = func
        self.options = options

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)
