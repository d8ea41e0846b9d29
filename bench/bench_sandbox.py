"""Sandbox latency and throughput, measured side by side in one run.

    python -m bench.bench_sandbox [--rows 10000] [--repeat 10]

Reports:
- cold single-row latency: a job on a container created for it (pool off);
- warm single-row latency: a job on a pre-started container from the warm pool;
- the floor: `docker run --rm IMAGE true`-equivalent create+start+remove of the
  same hardened container doing nothing (what any container-per-job design pays);
- throughput: rows/second scoring N rows of a trivial check with the defaults
  (jobs of `job_max_rows` rows, `max_parallel_jobs` in parallel), and the
  in-process baseline (the same check called directly, no sandbox).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from engine.contract import Status
from engine.runner import CodeCheck, Engine
from engine.sandbox.docker_backend import DockerBackend, container_options
from engine.settings import Settings

TRIVIAL = "def evaluate(model_output: str) -> bool:\n    return len(model_output) > 3\n"


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def describe(name: str, samples: list[float]) -> str:
    return (
        f"{name:<34} median {statistics.median(samples):8.1f} ms   "
        f"min {min(samples):8.1f} ms   max {max(samples):8.1f} ms   (n={len(samples)})"
    )


def one_row(engine: Engine) -> None:
    result = engine.run_check(CodeCheck(TRIVIAL), [{"model_output": "hello"}])
    assert result[0].status is Status.OK, result[0].error


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    base = Settings(container_labels={"scorebox.bench": "1"})

    cold_settings = base.model_copy(update={"pool_size": 0})
    with Engine(cold_settings) as engine:
        one_row(engine)  # warm the image cache
        cold = timed(lambda: one_row(engine), args.repeat)

    backend = DockerBackend(cold_settings)
    options = container_options(cold_settings, cold_settings.limits, {})

    def bare_container() -> None:
        container = backend.client.containers.create(**{**options, "command": ["true"]})
        container.start()
        container.wait()
        container.remove(force=True)

    floor = timed(bare_container, args.repeat)
    backend.close()

    warm_settings = base.model_copy(update={"pool_size": 2})
    warm: list[float] = []
    with Engine(warm_settings) as engine:
        assert isinstance(engine.backend, DockerBackend)
        engine.backend.prewarm(warm_settings.limits)
        for _ in range(args.repeat):
            deadline = time.monotonic() + 30
            while not any(engine.backend.pool.sizes().values()) and time.monotonic() < deadline:
                time.sleep(0.05)
            warm += timed(lambda: one_row(engine), 1)

        rows = [{"model_output": f"row number {i}"} for i in range(args.rows)]
        start = time.perf_counter()
        results = engine.run_check(CodeCheck(TRIVIAL), rows)
        elapsed = time.perf_counter() - start
    assert all(r.status is Status.OK for r in results)

    namespace: dict[str, object] = {}
    exec(TRIVIAL, namespace)
    evaluate = namespace["evaluate"]
    assert callable(evaluate)
    start = time.perf_counter()
    for row in rows:
        evaluate(row["model_output"])
    inproc = time.perf_counter() - start

    print(describe("cold single row (no pool)", cold))
    print(describe("warm single row (pool)", warm))
    print(describe("floor: create+start+remove `true`", floor))
    print(
        f"throughput {args.rows} rows              {args.rows / elapsed:10.0f} rows/s "
        f"({elapsed:.2f} s; jobs of {warm_settings.job_max_rows} rows, "
        f"{warm_settings.max_parallel_jobs} in parallel)"
    )
    print(f"in-process baseline (no sandbox)    {args.rows / inproc:10.0f} rows/s")
    print(
        f"ratios: cold/warm {statistics.median(cold) / statistics.median(warm):.1f}x, "
        f"cold/floor {statistics.median(cold) / statistics.median(floor):.2f}x"
    )


if __name__ == "__main__":
    main()
