def within_tolerance(output, expected, tolerance=0.0):
    """A number within the tolerance the scorer is configured with."""
    return 1.0 if abs(float(output) - float(expected)) <= tolerance else 0.0
