"""Sampling from the trace id decides as OpenTelemetry's TraceIdRatioBased sampler: checked
on known vectors, and against the real SDK in the instrumented clients' virtualenv."""

from __future__ import annotations

import json
import random
import subprocess

import pytest

from engine.online.sampling import bound_for_rate, sampled

LOW = 2**63  # the 64 low-order bits at half their range


@pytest.mark.parametrize(
    ("trace_id", "rate", "expected"),
    [
        ("0" * 32, 0.0, False),  # rate 0 keeps nothing, not even id 0
        ("0" * 32, 1e-12, True),
        ("f" * 32, 1.0, True),  # rate 1 keeps everything
        (f"{LOW - 1:032x}", 0.5, True),
        (f"{LOW:032x}", 0.5, False),
        # only the 64 low-order bits count: the high half does not change the decision
        ("ffffffffffffffff" + f"{LOW - 1:016x}", 0.5, True),
        ("0000000000000000" + f"{LOW:016x}", 0.5, False),
    ],
)
def test_known_vectors(trace_id: str, rate: float, expected: bool) -> None:
    assert sampled(trace_id, rate) is expected


def test_bound_is_the_sdks_rounding() -> None:
    assert bound_for_rate(0.25) == 2**62
    assert bound_for_rate(1.0) == 2**64
    with pytest.raises(ValueError, match="between 0 and 1"):
        bound_for_rate(1.5)


def test_same_decisions_as_the_opentelemetry_sdk(otel_python: str) -> None:
    rng = random.Random(7)
    ids = [rng.getrandbits(128) for _ in range(2_000)]
    rates = [0.0, 0.001, 0.1, 0.25, 0.5, 0.9, 1.0]
    program = (
        "import json, sys\n"
        "from opentelemetry.sdk.trace.sampling import TraceIdRatioBased, Decision\n"
        "ids, rates = json.load(sys.stdin)\n"
        "out = [[TraceIdRatioBased(r).should_sample(None, i, 'x').decision"
        " is Decision.RECORD_AND_SAMPLE for i in ids] for r in rates]\n"
        "print(json.dumps(out))\n"
    )
    proc = subprocess.run(
        [otel_python, "-c", program],
        input=json.dumps([ids, rates]),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    sdk = json.loads(proc.stdout)
    ours = [[sampled(f"{i:032x}", r) for i in ids] for r in rates]
    assert ours == sdk
    assert 0 < sum(sdk[3]) < len(ids)  # a rate between 0 and 1 keeps some, drops some
