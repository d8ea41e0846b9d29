from phoenix.experiments.evaluators import create_evaluator


@create_evaluator(name="shorter?", kind="CODE")
def wordiness_evaluator(expected, output):
    return len(output.split()) < len(expected["answer"].split())
