import asyncio


async def token_overlap(output, expected):
    await asyncio.sleep(0)
    a, b = set(output.lower().split()), set(expected.lower().split())
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)
