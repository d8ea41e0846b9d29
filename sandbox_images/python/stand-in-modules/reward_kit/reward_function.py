"""reward-kit's ``reward_kit.reward_function`` (0.4.1), as a stand-in: ``RewardFunction``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reward_kit.typed_interface import reward_function

__all__ = ["RewardFunction", "reward_function"]


class RewardFunction:
    """reward-kit's wrapper class, for files that import it: calls a local function."""

    def __init__(self, func: Callable[..., Any], **options: Any) -> None:
        self.func = func
        self.options = options

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)
