def trajectory_match(run, example):
    """The shape LangSmith runs for an evaluator uploaded to it: dicts, {metric: score}."""
    got = run["outputs"].get("trajectory", [])
    want = example["outputs"].get("trajectory", [])
    return {"trajectory_match": 1 if got == want else 0, "comment": f"{len(got)} step(s)"}
