from typing import Any


def get_assert(output: str, context: dict[str, Any]) -> float:
    """A number: promptfoo passes it when it is above 0 (no threshold set)."""
    target = int(context["vars"].get("target_words", 10))
    words = len(output.split())
    if words == 0:
        return 0
    return round(min(words, target) / max(words, target), 4)
