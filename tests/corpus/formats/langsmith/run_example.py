from langsmith.schemas import Example, Run


def exact_answer(run: Run, example: Example) -> dict:
    predicted = run.outputs["answer"].lower()
    expected = example.outputs["answer"].lower()
    return {"key": "exact_answer", "score": int(expected in predicted)}
