"""One tenant's waiting /v1/score requests cannot take every request thread of the server.

A synchronous request that waits for a sandbox slot holds one of the server's request
threads; tenant A opening 64 of them used to take all of them, so tenant B's one-row
request and even /healthz waited for A's. Now a tenant has at most
SCOREBOX_SCORE_QUEUE_PER_TENANT requests admitted (the rest get 429 at once), and
/healthz needs no thread. Measured in A's requests, not in seconds.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from engine.settings import Settings
from engine.storage import open_store
from engine.tenancy import auth
from tests.live_server import serve_env, serving

pytestmark = [pytest.mark.docker, pytest.mark.slow]

FLOOD = 64
ADMITTED = 4
SLOW_CHECK = (
    "import time\n\ndef evaluate(model_output: str) -> bool:\n"
    "    time.sleep(3.0)\n    return True\n"
)
TRIVIAL_CHECK = "def evaluate(model_output: str) -> bool:\n    return model_output == 'yes'\n"


def test_a_tenants_flood_of_waiting_requests_starves_no_one(
    docker_settings: Settings, tmp_path: Path
) -> None:
    env = serve_env(tmp_path, docker_settings, SCOREBOX_SCORE_QUEUE_PER_TENANT=str(ADMITTED))
    store = open_store(env["SCOREBOX_DATABASE_URL"])
    a = auth.create_tenant(store, "flood", {"concurrent_jobs": 1}).secret
    b = auth.create_tenant(store, "quiet").secret
    store.engine.dispose()
    with serving(env, tmp_path / "serve.log") as url, httpx.Client(base_url=url) as http:
        for key, source in ((a, SLOW_CHECK), (b, TRIVIAL_CHECK)):
            pushed = http.post(
                "/v1/checks",
                headers={"Authorization": f"Bearer {key}"},
                json={"name": "c", "kind": "code", "source": source},
            )
            assert pushed.status_code == 201, pushed.text
        body = {"checks": ["c"], "rows": [{"model_output": "yes"}]}
        done = 0  # A's requests answered 200 so far
        lock = threading.Lock()
        codes: list[int] = []
        retry_after: list[str | None] = []

        def flood_one(_: int) -> None:
            nonlocal done
            reply = httpx.post(
                f"{url}/v1/score",
                headers={"Authorization": f"Bearer {a}"},
                json=body,
                timeout=120,
            )
            with lock:
                codes.append(reply.status_code)
                retry_after.append(reply.headers.get("Retry-After"))
                if reply.status_code == 200:
                    done += 1

        with ThreadPoolExecutor(FLOOD) as pool:
            futures = [pool.submit(flood_one, i) for i in range(FLOOD)]
            # wait until A's refused requests are back: the admitted ones are now waiting
            while True:
                with lock:
                    if len(codes) >= FLOOD - ADMITTED:
                        break
                threading.Event().wait(0.05)
            health = http.get("/healthz", timeout=30)
            with lock:
                done_at_health = done
            quiet = http.post(
                "/v1/score", headers={"Authorization": f"Bearer {b}"}, json=body, timeout=60
            )
            with lock:
                done_at_quiet = done
            for future in futures:
                future.result()
    assert health.status_code == 200
    assert quiet.status_code == 200, quiet.text
    assert quiet.json()["results"][0]["score"] is True
    # A's admitted requests run one at a time (concurrent_jobs=1, 3 s each): B and /healthz
    # were answered before half of them were, not after A's whole flood
    assert done_at_health < ADMITTED / 2, (done_at_health, codes)
    assert done_at_quiet < ADMITTED / 2, (done_at_quiet, codes)
    # every one of A's requests was answered: admitted and scored, or refused at once (a
    # slot can free up before the last of the flood arrives, so a few more get in)
    assert codes.count(200) + codes.count(429) == FLOOD, codes
    assert codes.count(429) >= FLOOD - 2 * ADMITTED, codes
    assert all(r is not None for r, c in zip(retry_after, codes, strict=True) if c == 429)
