from phoenix.experiments.evaluators import create_evaluator


@create_evaluator(kind="CODE", name="tone")
def tone(output, metadata):
    """(score, label, explanation), as Phoenix's experiments accept."""
    shouting = sum(c.isupper() for c in output) > len(output) / 2
    label = "shouting" if shouting else "calm"
    return (0.0 if shouting else 1.0, label, f"{metadata.get('channel', 'chat')}: {label}")
