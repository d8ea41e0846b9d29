def correct(inputs: dict, outputs: dict, reference_outputs: dict) -> dict:
    got = outputs["answer"].strip().lower()
    want = reference_outputs["answer"].strip().lower()
    return {"key": "correct", "score": got == want, "comment": f"{inputs['question']} -> {got}"}
