from braintrust import traced


@traced
def _conversation(output):
    if isinstance(output, list):
        return "\n".join(f"{m['role']}: {m['content']}" for m in output)
    return str(output)


def resolution_scorer(input, output, **kwargs):
    """A conversation (a list of turns) that ends with an action taken."""
    text = _conversation(output).lower()
    acted = any(word in text for word in ("refunded", "return label", "escalated"))
    asked = input["customer_input"].lower()
    return 1.0 if acted and ("refund" in asked or "return" in asked) else 0.0
