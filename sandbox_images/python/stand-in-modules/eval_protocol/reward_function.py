"""eval-protocol's ``eval_protocol.reward_function`` (0.3.33), as a stand-in."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eval_protocol.typed_interface import reward_function

__all__ = ["RewardFunction", "reward_function"]


class RewardFunction:
    """eval-protocol's wrapper class, for files that import it: calls a local function."""

    def __init__(self, func: Callable[..., Any], **options: Any) -> None:
        self.func = func
        self.options = options

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)
