def concision(outputs: dict) -> bool:
    return len(outputs["answer"]) < 40
