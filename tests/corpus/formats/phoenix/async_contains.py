import asyncio


async def contains_reference(output, reference):
    await asyncio.sleep(0)
    return reference["answer"].lower() in output.lower()
