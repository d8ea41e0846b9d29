"""One model-gateway round trip against a direct HTTP call to the same scripted server.

A check in a warm container calls ``OpenAI().chat.completions.create`` ``calls`` times,
timing each call (the check's call to the reply it gets) with ``time.perf_counter``; the
host then makes the same calls with the openai SDK straight to the same scripted server
(``tests/fake_llm.py``). The response cache is off, so every gateway call goes upstream.
The difference of the medians is what the gateway adds per call (goal: <= 2 ms).
"""

from __future__ import annotations

import json
import time
from typing import Any

from bench.scorebox_side import BenchError, code_check, make_settings, open_runner

WARMUP = 5

CHECK = """
import json, time
from openai import OpenAI

def evaluate(model_output):
    client = OpenAI()
    calls, warmup = (int(x) for x in model_output.split(":"))
    took = []
    for i in range(calls + warmup):
        started = time.perf_counter()
        client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": f"call {i}"}]
        )
        if i >= warmup:
            took.append((time.perf_counter() - started) * 1000)
    return (True, json.dumps(took))
"""


def gateway_latency(calls: int) -> tuple[list[float], list[float]]:
    """(per-call ms through the gateway from a check, per-call ms direct from the host)."""
    import openai

    from engine.gateway import ModelGateway, gateway_session
    from engine.llm.openai_client import create_llm_client
    from engine.llm.usage import MeteredClient
    from tests.fake_llm import MODEL, FakeLLM, Reply

    fake = FakeLLM().start()
    fake.responder = lambda body: Reply(text="yes")
    runner = None
    try:
        settings = make_settings(
            pool_size=0,
            max_parallel_jobs=1,
            llm_base_url=fake.base_url,
            llm_api_key="bench-key",
            llm_model=MODEL,
        )
        gateway = ModelGateway(MeteredClient(create_llm_client(settings)), settings)  # no cache
        runner = open_runner(settings)
        with gateway_session(gateway.session("bench", f"bench-{time.time_ns()}")):
            [result] = runner.run_check(code_check(CHECK), [{"model_output": f"{calls}:{WARMUP}"}])
        if str(result.status) != "ok" or result.explanation is None:
            raise BenchError(f"the gateway check ended {result.status}: {result.error}")
        through: list[float] = json.loads(result.explanation)
        client = openai.OpenAI(base_url=fake.base_url, api_key="bench-key", max_retries=0)
        direct: list[float] = []
        for i in range(calls + WARMUP):
            started = time.perf_counter()
            client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": f"direct {i}"}]
            )
            if i >= WARMUP:
                direct.append((time.perf_counter() - started) * 1000)
        client.close()
        gateway.close()
        return through, direct
    finally:
        if runner is not None:
            runner.close()
        fake.stop()


def summary(through: list[float], direct: list[float]) -> dict[str, Any]:
    import statistics

    return {
        "added_ms_p50": statistics.median(through) - statistics.median(direct),
        "direct_ms_p50": statistics.median(direct),
    }
