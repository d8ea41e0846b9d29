def proper_escalation(input, output, metadata):
    """Skipped (None) unless the user asked for a person."""
    asked = any("human" in m["content"].lower() for m in input["messages"] if m["role"] == "user")
    if not asked:
        return None
    escalated = "escalate" in metadata.get("tool_calls", [])
    return {"name": "proper_escalation", "score": 1 if escalated else 0}
