from typing import List

from eval_protocol import EvaluateResult, Message, MetricResult, reward_function


@reward_function(id="haiku-shape", requirements=[])
def evaluate(messages: List[Message], **kwargs) -> EvaluateResult:
    lines = [line for line in (messages[-1].content or "").splitlines() if line.strip()]
    shaped = len(lines) == 3
    return EvaluateResult(
        score=1.0 if shaped else 0.0,
        reason=f"{len(lines)} line(s)",
        metrics={
            "lines": MetricResult(
                score=float(len(lines)), reason="line count", data={"lines": lines}
            ),
        },
    )
