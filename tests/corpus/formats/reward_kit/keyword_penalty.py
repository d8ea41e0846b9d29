from reward_kit import EvaluateResult, MetricResult, reward_function


@reward_function(id="keyword-penalty")
def penalty(messages, ground_truth=None, penalty_words=None, **kwargs) -> EvaluateResult:
    words = penalty_words or ["guarantee"]
    reply = messages[-1]["content"].lower()
    found = [w for w in words if w in reply]
    score = max(0.0, 1.0 - 0.5 * len(found))
    return EvaluateResult(
        score=score,
        reason="; ".join(found) or "none",
        metrics={"penalties": MetricResult(score=score, reason=f"{len(found)} found")},
    )
