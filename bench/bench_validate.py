"""Benchmark: validate a generated check of just under 256 KiB, N times per policy.

Run: ``.venv/bin/python bench/bench_validate.py [N]``; prints median and mean milliseconds.
"""

from __future__ import annotations

import statistics
import sys
import time

from engine.contract import Policy
from engine.validation import validate
from engine.validation.rules import MAX_SOURCE_BYTES

HEADER = """\
import json
import math
import re
from collections import Counter
from okareo.checks import CodeBasedCheck, CheckResponse

WORD = re.compile(r"[a-z']+")
"""

HELPER = '''

def helper_{i}(text: str, weight: float = {i}.5) -> float:
    """Helper {i}: a weighted count of words, vowels and digits."""
    words = WORD.findall(text.lower())
    counts = Counter(words)
    vowels = sum(1 for w in words for c in w if c in "aeiou")
    digits = [c for c in text if c.isdigit()]
    table = {{w: len(w) for w in counts}}
    total = 0.0
    for index, (word, count) in enumerate(sorted(counts.items())):
        total += math.log1p(count) * weight + table[word] / (index + 1)
    return total + vowels / max(len(digits), 1) + len(json.dumps(table)) / 1000
'''

FOOTER = """

class Check(CodeBasedCheck):
    @staticmethod
    def evaluate(model_output: str, scenario_result: str) -> CheckResponse:
        score = helper_0(model_output) - helper_0(scenario_result)
        return CheckResponse(score=abs(score) < 1.0, explanation=f"difference {score:.3f}")
"""


def generated_check(limit: int = MAX_SOURCE_BYTES) -> str:
    """A valid check with as many helper functions as fit in ``limit`` bytes."""
    parts = [HEADER]
    size = len(HEADER) + len(FOOTER)
    i = 0
    while True:
        helper = HELPER.format(i=i)
        if size + len(helper) > limit:
            break
        parts.append(helper)
        size += len(helper)
        i += 1
    parts.append(FOOTER)
    return "".join(parts)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    source = generated_check()
    size = len(source.encode())
    print(f"source: {size} bytes ({size / 1024:.1f} KiB), {source.count(chr(10))} lines")
    for policy in Policy:
        report = validate(source, policy)
        assert report.valid, report.issues
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            validate(source, policy)
            times.append((time.perf_counter() - started) * 1000)
        print(
            f"{policy.value:>10}: median {statistics.median(times):7.1f} ms, "
            f"mean {statistics.mean(times):7.1f} ms, min {min(times):7.1f} ms, "
            f"max {max(times):7.1f} ms over {runs} runs"
        )


if __name__ == "__main__":
    main()
