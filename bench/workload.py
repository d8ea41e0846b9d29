"""The checks and rows every system in the benchmark scores (stdlib only).

The peers' driver imports this module from the peers' own virtualenv, so it must
not import scorebox or anything outside the standard library.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

TRIVIAL = "def evaluate(model_output: str) -> bool:\n    return len(model_output.split()) > 3\n"

# A regex and a small Levenshtein distance over the first words of each side: about
# 100 µs a row in CPython, the cost of a typical hand-written scoring rule.
REALISTIC = """import re

WORD = re.compile(r"[a-z']+")


def _distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def evaluate(model_output: str, scenario_result: str) -> float:
    said = " ".join(WORD.findall(model_output.lower()))[:24]
    wanted = " ".join(WORD.findall(scenario_result.lower()))[:24]
    longest = max(len(said), len(wanted), 1)
    return round(1.0 - _distance(said, wanted) / longest, 4)
"""

CHECKS = {"trivial": TRIVIAL, "realistic": REALISTIC}
PARAMS = {"trivial": ("model_output",), "realistic": ("model_output", "scenario_result")}

_TEXT = (
    "the model answered that paris is the capital of france and berlin of germany while "
    "rome stays in italy a cat sat on the mat because it was warm enough for everyone "
    "to read the report about quarterly revenue growth and customer churn numbers"
)
_WORDS = _TEXT.split(" ")
DISTINCT_ROWS = 1000


def distinct_rows(seed: int = 12) -> list[dict[str, str]]:
    """``DISTINCT_ROWS`` different rows, the same on every call and in every process."""
    rng = random.Random(seed)
    out = []
    for _ in range(DISTINCT_ROWS):
        said = rng.sample(_WORDS, rng.randint(2, 14))
        wanted = said[:] if rng.random() < 0.3 else rng.sample(_WORDS, rng.randint(4, 10))
        out.append({"model_output": " ".join(said), "scenario_result": " ".join(wanted)})
    return out


def rows(count: int, seed: int = 12) -> list[dict[str, str]]:
    """``count`` rows cycling through the distinct ones (a list of references: cheap)."""
    base = distinct_rows(seed)
    return [base[i % len(base)] for i in range(count)]


def load(source: str) -> Callable[..., Any]:
    """The ``evaluate`` function of a check source, loaded in this process."""
    namespace: dict[str, Any] = {"__name__": "bench_check"}
    exec(compile(source, "<check>", "exec"), namespace)
    function: Callable[..., Any] = namespace["evaluate"]
    return function


def batch_script(kind: str, rows_path: str) -> str:
    """A script that scores every row of a JSON-lines file in one process (a peer's batch)."""
    args = ", ".join(f"{p}=row[{p!r}]" for p in PARAMS[kind])
    return (
        CHECKS[kind]
        + "\n\nimport json as _json, sys as _sys\n"
        + f"with open({rows_path!r}) as _f:\n"
        + "    _rows = [_json.loads(_line) for _line in _f]\n"
        + f"_sys.stdout.write(_json.dumps([evaluate({args}) for row in _rows]))\n"
    )


def single_script(kind: str) -> str:
    """A script that scores one row given as JSON on stdin (a peer's call per row)."""
    args = ", ".join(f"{p}=row[{p!r}]" for p in PARAMS[kind])
    return (
        CHECKS[kind]
        + "\n\nimport json as _json, sys as _sys\n"
        + "row = _json.loads(_sys.stdin.read())\n"
        + f"_sys.stdout.write(_json.dumps(evaluate({args})))\n"
    )
