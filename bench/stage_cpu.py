"""Where a ``scorebox serve`` of the bench spends its CPU, by stage of a run.

``python -m bench.service_path --stages`` starts the server with :func:`install` run first
(:data:`PRELUDE`): a few of the engine's functions are wrapped, each call's thread CPU
(``time.thread_time``) and wall time summed under its stage, as self time (a stage called
inside another, a result write inside the sandbox job that streamed it, is taken out of the
outer one). A daemon thread writes the sums to a JSON file twice a second; the bench reads it
before and after the run. The wrappers cost a few microseconds a call and are called a few
times a chunk of 500 rows, not a row.

What no stage names (the event loop's HTTP, the body's decoding, the scheduler, the run's
end) is the server's CPU less the stages' sum, from ``/proc`` as the service-path line reads it.
"""

from __future__ import annotations

import importlib
import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

#: Stage -> the functions counted under it (module, class or None, attribute). The route
#: and the local runner import theirs by name: those names are the ones wrapped.
STAGES: dict[str, tuple[tuple[str, str | None, str], ...]] = {
    "POST /v1/runs: check the rows": (("engine.api.routes.runs", None, "sent_rows"),),
    "POST /v1/runs: store the run and its rows": (
        ("engine.runs.service", "RunService", "submit_run"),
    ),
    "GET /v1/runs/{id} (the polls)": (("engine.runs.service", "RunService", "get_run"),),
    "chunk: the rest (usage, metrics, the writer)": (("engine.runs.local", None, "execute_chunk"),),
    "chunk: read its rows without a result": (
        ("engine.storage.run_sql", "SqlRuns", "pending_row_columns"),
        ("engine.storage.run_sql", "SqlRuns", "load_rows"),
    ),
    "chunk: sandbox job, host side (encode, records, blocks)": (
        ("engine.runs.executors", "CodeExecutor", "score"),
    ),
    "chunk: the container's attach socket (send, receive)": (
        ("engine.sandbox.docker.channel", "DockerChannel", "send"),
        ("engine.sandbox.docker.channel", "DockerChannel", "receive"),
    ),
    "chunk: write its results": (
        ("engine.storage.run_sql", "SqlRuns", "save_result_columns"),
        ("engine.storage.run_sql", "SqlRuns", "save_results"),
    ),
}

#: What the bench's server runs before ``scorebox serve``: ``{path}`` is the sums' file.
PRELUDE = "import bench.stage_cpu as _stages; _stages.install({path!r})"


class _Sums:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: dict[str, int] = dict.fromkeys(STAGES, 0)
        self.cpu: dict[str, float] = dict.fromkeys(STAGES, 0.0)
        self.wall: dict[str, float] = dict.fromkeys(STAGES, 0.0)
        self.local = threading.local()

    def wrap(self, fn: Callable[..., Any], stage: str) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            stack: list[str] = self.local.__dict__.setdefault("stack", [])
            cpu, wall = time.thread_time(), time.perf_counter()
            stack.append(stage)
            try:
                return fn(*args, **kwargs)
            finally:
                stack.pop()
                cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
                with self.lock:
                    self.calls[stage] += 1
                    self.cpu[stage] += cpu
                    self.wall[stage] += wall
                    if stack:  # self time: the outer stage's own less this call
                        self.cpu[stack[-1]] -= cpu
                        self.wall[stack[-1]] -= wall

        return timed

    def snapshot(self) -> dict[str, dict[str, float]]:
        with self.lock:
            return {
                s: {"calls": self.calls[s], "cpu": self.cpu[s], "wall": self.wall[s]}
                for s in STAGES
            }


def holder(module: str, owner: str | None) -> Any:
    """The module, or its class ``owner``, that holds a stage's function."""
    found: Any = importlib.import_module(module)
    return found if owner is None else getattr(found, owner)


def install(path: str) -> None:
    """Wrap every stage's functions in this process and write their sums to ``path``."""
    sums = _Sums()
    for stage, targets in STAGES.items():
        for module, owner, name in targets:
            where = holder(module, owner)
            setattr(where, name, sums.wrap(getattr(where, name), stage))
    out = Path(path)

    def write() -> None:
        while True:
            part = out.with_suffix(f".{os.getpid()}.part")
            part.write_text(json.dumps(sums.snapshot()))
            part.replace(out)
            time.sleep(0.5)

    threading.Thread(target=write, name="bench-stages", daemon=True).start()


def read(path: Path) -> dict[str, dict[str, float]]:
    """The sums :func:`install` wrote last."""
    found: dict[str, dict[str, float]] = json.loads(path.read_text())
    return found


def per_row(
    before: Mapping[str, Mapping[str, float]],
    after: Mapping[str, Mapping[str, float]],
    rows: int,
    server_cpu: float,
) -> list[dict[str, Any]]:
    """Each stage's CPU and wall µs a row between two reads, and the server's CPU no stage
    names (``server_cpu`` seconds less the stages' CPU)."""
    lines: list[dict[str, Any]] = []
    named = 0.0
    for stage in STAGES:
        cpu = after[stage]["cpu"] - before[stage]["cpu"]
        named += cpu
        lines.append(
            {
                "stage": stage,
                "calls": int(after[stage]["calls"] - before[stage]["calls"]),
                "cpu_us_per_row": cpu / rows * 1e6,
                "wall_us_per_row": (after[stage]["wall"] - before[stage]["wall"]) / rows * 1e6,
            }
        )
    lines.append(
        {
            "stage": "the rest of the server (HTTP, the body's decoding, scheduling)",
            "calls": None,
            "cpu_us_per_row": (server_cpu - named) / rows * 1e6,
            "wall_us_per_row": None,
        }
    )
    return lines
