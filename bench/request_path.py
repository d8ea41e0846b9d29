"""What one ``POST /v1/score`` or ``POST /v1/runs`` crosses: the engine's files (and their
lines) that run for it, and the threads that run them.

    python -m bench.request_path [--path score|runs]        # this checkout
    PYTHONPATH=<other checkout> python -m bench.request_path --root <other checkout>

A warm code check is scored once (warm-up), then a second request is traced on every
thread (``sys.setprofile`` and ``threading.setprofile``): each function call records its
file and its thread. For ``runs`` the trace lasts from the request until the run is
finished; the test's own thread, which waits for that, is not counted. The figures are
the distinct files under ``engine/`` that ran, the sum of their lengths in lines, and the
threads that ran engine code (the request's thread hand-offs are that count less one). It
needs Docker and the sandbox image, like the service. Only public names are used, so it
runs against older checkouts too (for a before/after figure measured side by side).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

DONE = {"succeeded", "failed", "cancelled"}
CHECK = "def evaluate(model_output: str) -> bool:\n    return 'yes' in model_output\n"


def trace_request(root: Path, path: str = "score") -> dict[str, Any]:
    """Files under ``root/engine`` that run while the second of two identical requests is
    answered (``path``: ``score`` or ``runs``); ``root`` must be the checkout that ``engine``
    is imported from."""
    from fastapi.testclient import TestClient

    from engine.app import create_app
    from engine.settings import Settings
    from engine.storage import open_store
    from engine.tenancy import auth

    engine_dir = str((root / "engine").resolve()) + "/"
    seen: set[str] = set()
    threads: set[int] = set()
    recording = threading.Event()
    waiter = threading.get_ident()  # the test's thread: it only waits for the answer

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and recording.is_set():
            name = frame.f_code.co_filename
            ident = threading.get_ident()
            if name.startswith(engine_dir) and ident != waiter:
                seen.add(name)
                threads.add(ident)

    # every thread the app starts (the test client's event loop, the scheduler's workers,
    # the sandbox's) is profiled from its start; only the second request is recorded
    threading.setprofile(profile)
    sys.setprofile(profile)
    with tempfile.TemporaryDirectory() as data:
        settings = Settings(data_dir=Path(data), pool_size=1)
        with TestClient(create_app(settings)) as client:
            store = open_store(settings.effective_database_url, migrate=False)
            tenant = auth.create_tenant(store, "bench", {})
            headers = {"Authorization": f"Bearer {tenant.secret}"}
            pushed = client.post(
                "/v1/checks",
                json={"name": "has-yes", "kind": "code", "source": CHECK},
                headers=headers,
            )
            pushed.raise_for_status()
            body = {"checks": ["has-yes"], "rows": [{"model_output": "yes"}]}
            _request(client, path, body, headers, store, tenant.tenant.id)
            recording.set()
            try:
                _request(client, path, body, headers, store, tenant.tenant.id)
            finally:
                recording.clear()
            store.engine.dispose()
    sys.setprofile(None)
    threading.setprofile(None)
    files = sorted(seen)
    lines = {f[len(engine_dir) :]: len(Path(f).read_text().splitlines()) for f in files}
    return {
        "path": path,
        "files": len(files),
        "lines": sum(lines.values()),
        "threads": len(threads),
        "per_file": lines,
    }


def _request(
    client: Any,
    path: str,
    body: dict[str, Any],
    headers: dict[str, str],
    store: Any,
    tenant_id: str,
) -> None:
    """One ``POST /v1/score``, or one ``POST /v1/runs`` waited for until it is finished."""
    if path == "score":
        client.post("/v1/score", json=body, headers=headers).raise_for_status()
        return
    answer = client.post("/v1/runs", json=body, headers=headers)
    answer.raise_for_status()
    run_id = answer.json()["id"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the store, not HTTP: polling must not be traced
        run = store.get_run(tenant_id, run_id)
        if str(run.status) in DONE:
            return
        time.sleep(0.02)
    raise TimeoutError(f"run {run_id} did not finish in 60 s")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--path", choices=["score", "runs"], default="score")
    parser.add_argument("--json", action="store_true", help="print every file and its lines")
    args = parser.parse_args(argv)
    result = trace_request(args.root, args.path)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"POST /v1/{args.path} crosses {result['files']} files, {result['lines']} lines,"
            f" on {result['threads']} threads"
        )


if __name__ == "__main__":
    main()
