"""Drive a peer sandbox (epicbox or llm-sandbox); runs in bench/.venv-peers, never in scorebox's.

    bench/.venv-peers/bin/python -m bench.peers_driver --peer epicbox --image REF \
        --mode latency --kind trivial --calls 200
    ... --mode batch --kind realistic --rows 100000 --repeats 3

Prints one JSON object: ``{"latency_ms": [...]}`` or ``{"batch_seconds": [...]}``.
Imports only the standard library, the peer, and ``bench.workload``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

from bench import workload

ONE_ROW = workload.distinct_rows()[7]
EXPECTED_ONE = workload.load(workload.TRIVIAL)(model_output=ONE_ROW["model_output"])


Files = list[dict[str, bytes | str]]


def _epicbox(image: str, batch: bool) -> Callable[[bytes | None, Files], Any]:
    import epicbox  # type: ignore[import-not-found]

    # A writable root: epicbox writes its files into /sandbox of the container.
    epicbox.configure(
        profiles=[
            epicbox.Profile("bench", image, user="10001", read_only=False, network_disabled=True)
        ]
    )
    if batch:
        limits = {"cputime": None, "realtime": None, "memory": 4096, "processes": 64}
    else:
        limits = {"cputime": 10, "realtime": 30, "memory": 256, "processes": 64}

    def run(stdin: bytes | None, files: Files) -> Any:
        result = epicbox.run("bench", "python3 main.py", files=files, stdin=stdin, limits=limits)
        if result["exit_code"] != 0:
            raise RuntimeError(f"epicbox: exit {result['exit_code']}: {result['stderr'][-500:]!r}")
        return json.loads(result["stdout"])

    return run


def epicbox_latency(image: str, calls: int) -> list[float]:
    run = _epicbox(image, batch=False)
    script = workload.single_script("trivial").encode()
    stdin = json.dumps(workload.distinct_rows()[7]).encode()
    samples = []
    for k in range(calls + 2):
        started = time.perf_counter()
        out = run(stdin, [{"name": "main.py", "content": script}])
        if k >= 2:
            samples.append((time.perf_counter() - started) * 1000)
        if out != EXPECTED_ONE:
            raise RuntimeError(f"epicbox answered {out!r}")
    return samples


def _rows_file(count: int) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in workload.rows(count)).encode()


def epicbox_batch(image: str, kind: str, count: int, repeats: int) -> list[float]:
    """One epicbox call per batch: the rows file and a loop over it, one container."""
    run = _epicbox(image, batch=True)
    script = workload.batch_script(kind, "rows.jsonl").encode()
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        files: Files = [
            {"name": "main.py", "content": script},
            {"name": "rows.jsonl", "content": _rows_file(count)},
        ]
        out = run(None, files)
        samples.append(time.perf_counter() - started)
        if len(out) != count:
            raise RuntimeError(f"epicbox returned {len(out)} scores for {count} rows")
    return samples


def _llm_session(image: str) -> Any:
    from llm_sandbox import SandboxSession  # type: ignore[import-not-found]

    # Its defaults (root in the container, a venv made at open) on the peers' image,
    # which adds `python` on PATH and python3-venv; no network, like the others.
    session = SandboxSession(
        lang="python",
        image=image,
        keep_template=True,
        runtime_configs={"network_mode": "none", "mem_limit": "4g"},
        default_timeout=3600,
        execution_timeout=3600,
        session_timeout=7200,
    )
    session.open()
    return session


def llm_sandbox_latency(image: str, calls: int) -> list[float]:
    """A warm session (opened once, outside the clock), one ``run`` per row."""
    session = _llm_session(image)
    row = workload.distinct_rows()[7]
    code = (
        workload.CHECKS["trivial"]
        + f"\nimport json\nprint(json.dumps(evaluate(model_output={row['model_output']!r})))\n"
    )
    samples = []
    try:
        for k in range(calls + 2):
            started = time.perf_counter()
            out = session.run(code)
            if k >= 2:
                samples.append((time.perf_counter() - started) * 1000)
            if out.exit_code != 0 or json.loads(out.stdout) != EXPECTED_ONE:
                answer = f"{out.exit_code} {out.stdout!r} {out.stderr[-300:]!r}"
                raise RuntimeError(f"llm-sandbox answered {answer}")
    finally:
        session.close()
    return samples


def llm_sandbox_batch(image: str, kind: str, count: int, repeats: int) -> list[float]:
    """A warm session; per batch: copy the rows file in, one ``run`` looping over it."""
    session = _llm_session(image)
    samples = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for _ in range(repeats):
                started = time.perf_counter()
                path = os.path.join(tmp, "rows.jsonl")
                with open(path, "wb") as f:
                    f.write(_rows_file(count))
                dest = f"/sandbox/rows-{uuid.uuid4().hex}.jsonl"
                session.copy_to_runtime(path, dest)
                out = session.run(workload.batch_script(kind, dest))
                elapsed = time.perf_counter() - started
                if out.exit_code != 0:
                    raise RuntimeError(f"llm-sandbox: exit {out.exit_code}: {out.stderr[-500:]!r}")
                scores = json.loads(out.stdout)
                if len(scores) != count:
                    raise RuntimeError(
                        f"llm-sandbox returned {len(scores)} scores for {count} rows"
                    )
                samples.append(elapsed)
                session.execute_command(f"rm -f {dest}")
    finally:
        session.close()
    return samples


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--peer", choices=("epicbox", "llm-sandbox"), required=True)
    parser.add_argument("--image", required=True)
    parser.add_argument("--mode", choices=("latency", "batch"), required=True)
    parser.add_argument("--kind", choices=tuple(workload.CHECKS), default="trivial")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if args.mode == "latency":
        latency = epicbox_latency if args.peer == "epicbox" else llm_sandbox_latency
        out: dict[str, Any] = {"latency_ms": latency(args.image, args.calls)}
    else:
        batch = epicbox_batch if args.peer == "epicbox" else llm_sandbox_batch
        out = {"batch_seconds": batch(args.image, args.kind, args.rows, args.repeats)}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
