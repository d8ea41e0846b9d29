def get_assert(output, context):
    """Two sub-metrics, reported as namedScores."""
    polite = 1.0 if any(w in output.lower() for w in ("please", "thanks", "thank you")) else 0.0
    brief = 1.0 if len(output) <= int(context["config"].get("max_chars", 80)) else 0.0
    score = (polite + brief) / 2
    return {
        "pass": score >= 0.5,
        "score": score,
        "reason": f"polite={polite}, brief={brief}",
        "namedScores": {"polite": polite, "brief": brief},
    }
