"""eval-protocol's ``eval_protocol.typed_interface`` (0.3.33), as a stand-in: the decorator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["reward_function"]


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
