import asyncio

from eval_protocol.models import EvaluateResult, MetricResult
from eval_protocol.typed_interface import reward_function


@reward_function
async def grounded(messages, ground_truth=None, **kwargs):
    await asyncio.sleep(0)
    reply = messages[-1]["content"].lower()
    facts = ground_truth or []
    hits = [f for f in facts if f.lower() in reply]
    score = len(hits) / len(facts) if facts else 0.0
    return EvaluateResult(
        score=score,
        reason=", ".join(hits) or "no facts",
        metrics={
            "facts": MetricResult(
                score=score, reason=f"{len(hits)}/{len(facts)}", success=bool(hits)
            )
        },
    )
