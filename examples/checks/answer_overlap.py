"""Uses scenario_result: token overlap (F1) between the answer and the expected answer."""

import re

from engine.checks import CheckResponse


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def evaluate(model_output: str, scenario_result: str) -> CheckResponse:
    answer, expected = _tokens(model_output), _tokens(scenario_result)
    if not answer or not expected:
        return CheckResponse(score=0.0, explanation="empty answer or expected result")
    common = len(set(answer) & set(expected))
    precision, recall = common / len(set(answer)), common / len(set(expected))
    f1 = 0.0 if common == 0 else 2 * precision * recall / (precision + recall)
    return CheckResponse(score=round(f1, 4), explanation=f"{common} shared tokens")
