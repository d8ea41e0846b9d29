def handler(input, output, expected):
    return 1.0 if str(output).strip().lower() == str(expected).strip().lower() else 0.0
