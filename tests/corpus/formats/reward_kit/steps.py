from reward_kit.models import EvaluateResult, MetricResult, StepOutput
from reward_kit.typed_interface import reward_function


@reward_function
def per_turn(messages, **kwargs):
    """A reward per assistant turn (step_outputs), the final score their mean."""
    turns = [m for m in messages if m["role"] == "assistant"]
    steps = [
        StepOutput(step_index=i, base_reward=1.0 if m["content"].endswith("?") else 0.0)
        for i, m in enumerate(turns)
    ]
    score = sum(s.base_reward for s in steps) / len(steps) if steps else 0.0
    return EvaluateResult(
        score=score,
        reason=f"{len(steps)} turn(s)",
        metrics={"asks": MetricResult(score=score, reason="turns ending in a question")},
        step_outputs=steps,
    )
