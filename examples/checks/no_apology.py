"""Bool check on the output and the metadata: no apologies unless the row says they are fine."""

APOLOGIES = ("i'm sorry", "i am sorry", "apologize", "apologies", "unfortunately")


def evaluate(model_output: str, metadata: dict) -> bool:
    if metadata.get("apology_ok"):
        return True
    text = model_output.lower()
    return not any(phrase in text for phrase in APOLOGIES)
