from typing import List

from reward_kit.models import EvaluateResult, Message, MetricResult
from reward_kit.typed_interface import reward_function


@reward_function
def length_reward(messages: List[Message], max_words: int = 30, **kwargs) -> EvaluateResult:
    """A keyword parameter the deployment configures (max_words)."""
    content = messages[-1].content or ""
    words = len(content.split())
    score = 1.0 if words <= max_words else max_words / words
    return EvaluateResult(
        score=score,
        reason=f"{words} words (limit {max_words})",
        metrics={"words": MetricResult(score=score, reason=str(words), is_score_valid=words > 0)},
    )
