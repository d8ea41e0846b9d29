def answer_quality(output, expected, metadata):
    """Several named scores from one scorer: Braintrust logs each."""
    words = len(output.split())
    limit = metadata.get("max_words", 20)
    return [
        {"name": "correct", "score": 1.0 if expected.lower() in output.lower() else 0.0},
        {"name": "concise", "score": 1.0 if words <= limit else limit / words},
    ]
