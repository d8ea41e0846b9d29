from braintrust import Score


def json_shape(output, expected):
    """Structured outputs: the task returned a dict."""
    missing = [k for k in expected["required"] if k not in output]
    return Score(
        name="json_shape",
        score=1 - len(missing) / len(expected["required"]),
        metadata={"missing": missing},
    )
