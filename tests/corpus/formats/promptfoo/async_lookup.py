import asyncio


async def get_assert(output, context):
    await asyncio.sleep(0)
    allowed = set(context["config"].get("allowed", []))
    answer = output.strip().rstrip(".").lower()
    return {"pass": answer in allowed, "score": float(answer in allowed), "reason": answer}
