import json


def matches_expected_keys(output, expected) -> float:
    data = output if isinstance(output, dict) else json.loads(output)
    wanted = set(expected)
    return len(wanted & set(data)) / len(wanted)
