def checks(outputs: dict, reference_outputs: dict) -> list[dict]:
    answer = outputs["answer"]
    return [
        {"key": "has_answer", "score": bool(answer.strip())},
        {"key": "matches", "score": answer == reference_outputs["answer"], "comment": answer},
    ]
