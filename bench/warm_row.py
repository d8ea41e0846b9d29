"""One warm row through the harness alone: a job written to a warm container, its first
result and its ``done`` read back, for two sandbox images side by side.

    python -m bench.warm_row IMAGE_BEFORE IMAGE_AFTER [--calls 200] [--gap-ms 3] [--runtime runsc]

Each image runs the harness as the container's PID 1 (as the Docker backend starts it),
so the reset between jobs and fork-ahead (engine/harness/ahead.py) happen as in service.
The images are timed in turn, one job each, with ``--gap-ms`` between a job's ``done`` and
the next job (the host's own work between two requests), so load on the machine falls on
both alike. ``python -m bench.http_side`` times the whole ``POST /v1/score`` instead.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time

from bench import workload
from bench.measure import percentile
from engine.models import Row
from engine.sandbox.load_hints import okareo_source
from engine.sandbox.protocol import Job


def start(image: str, runtime: str | None) -> subprocess.Popen[bytes]:
    """The harness of ``image`` as PID 1 of a container, its stdin and stdout ours."""
    command = ["docker", "run", "-i", "--rm", "--network", "none", "--user", "10001"]
    command += ["--entrypoint", "python3"] + (["--runtime", runtime] if runtime else [])
    command += [image, "-I", "/opt/scorebox/harness.py"]
    return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)


def one_job(harness: subprocess.Popen[bytes], n: int) -> tuple[float, float]:
    """(ms to the first result, ms to ``done``) of a one-row job of the trivial check."""
    assert harness.stdin is not None and harness.stdout is not None
    job = Job(
        nonce=f"n{n}",
        source=workload.TRIVIAL,
        okareo=okareo_source(workload.TRIVIAL, None),  # as the service's jobs say
        row_timeout_seconds=5.0,
        max_output_bytes=100_000,
        rows=[Row(model_output="the model answered that paris")],
    ).encode()
    began = time.perf_counter()
    harness.stdin.write(job)
    seen = b""
    first: float | None = None
    while b'"t": "done"' not in seen:
        chunk = os.read(harness.stdout.fileno(), 1 << 16)
        if not chunk:
            raise SystemExit(f"the harness exited: {seen[-500:]!r}")
        seen += chunk
        if first is None and (b'"t": "block"' in seen or b'"t": "row"' in seen):
            first = time.perf_counter() - began
    done = time.perf_counter() - began
    if b'"reusable": true' not in seen:
        raise SystemExit("the container did not stay reusable (is the harness PID 1?)")
    return (first if first is not None else done) * 1000, done * 1000


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.warm_row", description=__doc__)
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--gap-ms", type=float, default=3.0)
    parser.add_argument("--runtime", default=None)
    args = parser.parse_args(argv)
    harnesses = {
        "before": start(args.before, args.runtime),
        "after": start(args.after, args.runtime),
    }
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in harnesses}
    try:
        for n in range(10 + args.calls):
            for name, harness in harnesses.items():
                figures = one_job(harness, n)
                if n >= 10:  # the first ten warm the container
                    samples[name].append(figures)
                time.sleep(args.gap_ms / 1000)
    finally:
        for harness in harnesses.values():
            if harness.stdin is not None:
                harness.stdin.close()
            harness.wait(timeout=60)
    for name, timed in samples.items():
        first = [f for f, _ in timed]
        done = [d for _, d in timed]
        print(
            f"{name:<7} first result p50 {percentile(first, 50):7.2f} ms (min {min(first):6.2f})"
            f"  done p50 {percentile(done, 50):7.2f} ms  n={len(timed)}"
        )


if __name__ == "__main__":
    main()
