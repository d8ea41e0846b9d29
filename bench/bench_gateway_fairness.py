"""Another tenant's single model call, alone and while one tenant floods the gateway.

Tenant B's check makes ``calls`` model calls one after another in a warm container, timing
each (the check's call to the reply it gets). It runs once alone, then again while tenant
A's check floods the gateway from three containers at once (64 connections each, every
call 1.5 s upstream), so A's calls queue in its tenant's slots. p50 and p95 of B's calls
in each case; the goal is that the flood changes neither by more than a few milliseconds.

    .venv/bin/python -m bench.bench_gateway_fairness [--calls N] [--runtime runc|runsc]

Writes ``bench/results/gateway_fairness.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from pathlib import Path
from typing import Any

from bench.measure import percentile
from bench.scorebox_side import BenchError, code_check, make_settings, open_runner

#: Each flood call takes this long upstream.
SLOW_SECONDS = 1.5
#: The flood's containers (rows of one job each) and how long each floods.
FLOOD_ROWS = 3
WARMUP = 5
RESULTS = Path(__file__).resolve().parent / "results"

QUIET = """
import json, time
from openai import OpenAI

def evaluate(model_output):
    client = OpenAI(max_retries=0)
    calls, warmup = (int(x) for x in model_output.split(":"))
    took = []
    for i in range(calls + warmup):
        started = time.perf_counter()
        client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": f"quiet {i}"}]
        )
        if i >= warmup:
            took.append((time.perf_counter() - started) * 1000)
    return (True, json.dumps(took))
"""

FLOOD = """
import json, socket, time

def evaluate(model_output):
    socks = []
    for i in range(64):
        body = json.dumps(
            {"model": "gpt-4o", "messages": [{"role": "user", "content": f"flood {i}"}]}
        ).encode()
        sock = socket.socket()
        sock.setblocking(False)
        try:
            sock.connect(("127.0.0.1", 8642))
        except BlockingIOError:
            pass
        socks.append((sock, b"POST /v1/chat/completions HTTP/1.1\\r\\nHost: x\\r\\n"
                      b"Content-Type: application/json\\r\\nContent-Length: "
                      + str(len(body)).encode() + b"\\r\\n\\r\\n" + body))
    time.sleep(0.2)
    for sock, request in socks:
        try:
            sock.send(request)
        except OSError:
            pass
    time.sleep(float(model_output))
    return True
"""


def measure(calls: int, runtime: str | None) -> dict[str, Any]:
    """B's per-call milliseconds alone and under A's flood, and what the flood did."""
    from engine.gateway import ModelGateway, gateway_session
    from engine.llm.openai_client import create_llm_client
    from engine.llm.usage import MeteredClient
    from tests.fake_llm import MODEL, FakeLLM, Reply

    flood_calls = 0
    lock = threading.Lock()

    def respond(body: dict[str, Any]) -> Reply:
        nonlocal flood_calls
        if str(body["messages"][-1]["content"]).startswith("flood"):
            with lock:
                flood_calls += 1
            time.sleep(SLOW_SECONDS)
        return Reply(text="yes")

    fake = FakeLLM().start()
    fake.responder = respond
    extra = {"runtime": runtime} if runtime else {}
    settings = make_settings(
        pool_size=0,
        max_parallel_jobs=FLOOD_ROWS + 1,
        job_max_rows=1,
        llm_base_url=fake.base_url,
        llm_api_key="bench-key",
        llm_model=MODEL,
        llm_timeout_seconds=60,
        **extra,
    )
    gateway = ModelGateway(MeteredClient(create_llm_client(settings)), settings)  # no cache
    runner = open_runner(settings)

    def quiet(run: str) -> list[float]:
        with gateway_session(gateway.session("tenant-b", run)):
            [result] = runner.run_check(code_check(QUIET), [{"model_output": f"{calls}:{WARMUP}"}])
        if str(result.status) != "ok" or result.explanation is None:
            raise BenchError(f"tenant B's check ended {result.status}: {result.error}")
        return list(json.loads(result.explanation))

    try:
        alone = quiet("alone")
        flood_seconds = max(8.0, calls * 0.05)
        flood_errors: list[str] = []

        def run_flood() -> None:
            with gateway_session(gateway.session("tenant-a", "flood")):
                rows = [{"model_output": str(flood_seconds)}] * FLOOD_ROWS
                for result in runner.run_check(code_check(FLOOD), rows):
                    if str(result.status) != "ok":
                        flood_errors.append(str(result.error))

        thread = threading.Thread(target=run_flood)
        thread.start()
        deadline = time.monotonic() + 60
        while gateway.dispatcher.queued("tenant-a") == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        queued_at_start = gateway.dispatcher.queued("tenant-a")
        if not queued_at_start:
            raise BenchError("tenant A's flood never queued a call")
        flooded = quiet("flooded")
        still_queued = gateway.dispatcher.queued("tenant-a")
        thread.join(180)
        if flood_errors:
            raise BenchError(f"a flood row failed: {flood_errors[0]}")
        return {
            "calls": calls,
            "runtime": runtime or "runc",
            "alone_ms": alone,
            "flooded_ms": flooded,
            "flood_queued_at_start": queued_at_start,
            "flood_queued_after": still_queued,
            "flood_calls_upstream": flood_calls,
        }
    finally:
        gateway.close()
        runner.close()
        fake.stop()


def report(figures: dict[str, Any]) -> str:
    lines = [
        "# Model gateway: another tenant's call under a flood",
        "",
        f"Tenant B: {figures['calls']} sequential calls from one check ({figures['runtime']}); "
        f"tenant A: {FLOOD_ROWS} containers x 64 connections, {SLOW_SECONDS} s a call upstream "
        f"({figures['flood_queued_at_start']} of A's calls queued in its tenant's slots when "
        f"B started, {figures['flood_queued_after']} when B ended; "
        f"{figures['flood_calls_upstream']} flood calls reached the upstream in all).",
        "",
        "| tenant B's single call | p50 ms | p95 ms |",
        "| --- | ---: | ---: |",
    ]
    for name, key in (("alone", "alone_ms"), ("under tenant A's flood", "flooded_ms")):
        samples = figures[key]
        lines.append(f"| {name} | {percentile(samples, 50):.2f} | {percentile(samples, 95):.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--runtime", choices=["runc", "runsc"], default=None)
    args = parser.parse_args()
    figures = measure(args.calls, args.runtime)
    text = report(figures)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "gateway_fairness.md").write_text(text)
    (RESULTS / "gateway_fairness.json").write_text(json.dumps(figures, indent=1) + "\n")
    print(text)


if __name__ == "__main__":
    main()
