"""A small stand-in for reward-kit inside the scorebox sandbox.

``from reward_kit import reward_function, EvaluateResult, MetricResult, Message`` and
the submodules as reward-kit 0.4.1 lays them out (``reward_kit.models``,
``reward_kit.typed_interface``, ``reward_kit.reward_function``) resolve here unless the
check declares the real package, whose directory comes first on ``sys.path`` (this one
is appended last by the harness). It carries the names a reward function uses, not
reward-kit's deployment machinery.
"""

from __future__ import annotations

from reward_kit.models import EvaluateResult, Message, MetricResult, StepOutput
from reward_kit.reward_function import RewardFunction
from reward_kit.typed_interface import reward_function

__all__ = [
    "EvaluateResult",
    "Message",
    "MetricResult",
    "RewardFunction",
    "StepOutput",
    "reward_function",
]
__version__ = "0.0.0+scorebox.stand-in"
