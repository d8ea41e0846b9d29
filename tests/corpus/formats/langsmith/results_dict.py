from langsmith.evaluation import EvaluationResult


def graded(run, example):
    steps = run.outputs.get("steps", [])
    expected = example.outputs.get("steps", [])
    return {
        "results": [
            EvaluationResult(key="same_steps", score=int(steps == expected)),
            EvaluationResult(key="step_count", score=min(len(steps), 5) / 5),
        ]
    }
