"""A small stand-in for eval-protocol (reward-kit's successor) inside the scorebox sandbox.

``from eval_protocol import reward_function, EvaluateResult, MetricResult, Message`` and
``eval_protocol.models`` / ``eval_protocol.typed_interface`` /
``eval_protocol.reward_function`` resolve here unless the check declares the real
package (its directory comes first on ``sys.path``). The types carry eval-protocol
0.3.33's fields (``MetricResult.data``, no 0..1 cap on a metric's score).
"""

from __future__ import annotations

from eval_protocol.models import EvaluateResult, Message, MetricResult, StepOutput
from eval_protocol.reward_function import RewardFunction
from eval_protocol.typed_interface import reward_function

__all__ = [
    "EvaluateResult",
    "Message",
    "MetricResult",
    "RewardFunction",
    "StepOutput",
    "reward_function",
]
__version__ = "0.0.0+scorebox.stand-in"
