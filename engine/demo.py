"""``python -m engine.demo``: start the service on the embedded defaults, push the example
checks, score ``examples/rows.jsonl`` through the API and print the summary.

The service runs in this process on a free local port with a temporary data
directory (SQLite) unless ``--data-dir`` is given. Exits non-zero on failure.
"""

from __future__ import annotations

import argparse
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engine.demo", description=__doc__)
    parser.add_argument("--examples", type=Path, default=EXAMPLES)
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args(argv)

    import uvicorn

    from engine.api import create_app
    from engine.auth import create_tenant
    from engine.cli.run import read_rows, render_summary
    from engine.settings import Settings
    from engine.storage import open_store

    temp = tempfile.TemporaryDirectory(prefix="scorebox-demo-")
    data_dir = args.data_dir or Path(temp.name)
    port = free_port()
    settings = Settings(data_dir=data_dir, host="127.0.0.1", port=port)
    store = open_store(settings.effective_database_url)
    key = create_tenant(store, f"demo-{int(time.time())}").secret
    store.engine.dispose()

    server = uvicorn.Server(
        uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=300
        ) as client:
            deadline = time.monotonic() + 120
            while not server.started:
                if time.monotonic() > deadline or not thread.is_alive():
                    print("the service did not start", file=sys.stderr)
                    return 1
                time.sleep(0.1)
            print(f"scorebox service on {base} (data in {data_dir})")
            names = []
            for path in sorted((args.examples / "checks").glob("*.py")):
                reply = client.post(
                    "/v1/checks/upload", files={"file": (path.name, path.read_bytes())}
                )
                if reply.status_code >= 400:
                    print(f"push {path.name} failed: {reply.text}", file=sys.stderr)
                    return 1
                body = reply.json()
                names.append(f"{body['name']}@{body['version']}")
                print(f"pushed {body['name']}@{body['version']}")
            rows_path = args.examples / "rows.jsonl"
            rows = read_rows(rows_path)
            reply = client.post("/v1/runs", json={"checks": names, "rows": rows})
            if reply.status_code != 202:
                print(f"run failed to start: {reply.text}", file=sys.stderr)
                return 1
            run: dict[str, Any] = reply.json()
            while run["status"] in ("queued", "running"):
                time.sleep(0.3)
                run = client.get(f"/v1/runs/{run['id']}").json()
            render_summary(run["summary"], f"{len(rows)} rows of {rows_path.name}: {run['status']}")
            return 0 if run["status"] == "succeeded" else 1
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        temp.cleanup()


if __name__ == "__main__":
    raise SystemExit(main())
