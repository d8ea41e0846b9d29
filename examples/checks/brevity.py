"""Plain function check: 1.0 for answers of up to 40 words, falling off linearly to 0 at 120."""


def evaluate(model_output: str) -> float:
    words = len(model_output.split())
    if words <= 40:
        return 1.0
    return max(0.0, 1.0 - (words - 40) / 80)
