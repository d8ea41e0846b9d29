import asyncio

from langsmith import traceable


@traceable
async def polite(outputs: dict) -> dict:
    await asyncio.sleep(0)
    ok = "please" in outputs["answer"].lower()
    return {"key": "polite", "score": 1 if ok else 0, "comment": "asked nicely" if ok else "no"}
