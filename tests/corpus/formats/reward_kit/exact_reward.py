from reward_kit import reward_function


@reward_function
def exact_answer(messages, ground_truth=None, **kwargs):
    reply = messages[-1]["content"].strip().lower()
    ok = ground_truth is not None and reply == str(ground_truth).strip().lower()
    return {
        "score": 1.0 if ok else 0.0,
        "reason": "matches the ground truth" if ok else "differs",
        "metrics": {"exact": {"score": 1.0 if ok else 0.0, "reason": "compared lowercased"}},
    }
