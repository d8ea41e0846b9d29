"""What one ``POST /v1/score`` crosses: the engine's files (and their lines) that run for it.

    python -m bench.request_path            # this checkout
    PYTHONPATH=<other checkout> python -m bench.request_path --root <other checkout>

A warm code check is scored once (warm-up), then a second request is traced on every
thread (``sys.setprofile`` and ``threading.setprofile``): each function call records its
file. The figure is the number of distinct files under ``engine/`` that ran during the
second request and the sum of their lengths in lines. It needs Docker and the sandbox
image, like the service. Only public names are used, so it runs against older checkouts
too (for a before/after figure measured side by side).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType
from typing import Any

CHECK = "def evaluate(model_output: str) -> bool:\n    return 'yes' in model_output\n"


def trace_request(root: Path) -> dict[str, Any]:
    """Files under ``root/engine`` that run while the second of two identical requests is
    answered; ``root`` must be the checkout that ``engine`` is imported from."""
    from fastapi.testclient import TestClient

    from engine import auth
    from engine.api import create_app
    from engine.settings import Settings
    from engine.storage import open_store

    engine_dir = str((root / "engine").resolve()) + "/"
    seen: set[str] = set()
    recording = threading.Event()

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and recording.is_set():
            name = frame.f_code.co_filename
            if name.startswith(engine_dir):
                seen.add(name)

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
            client.post("/v1/score", json=body, headers=headers).raise_for_status()
            recording.set()
            try:
                answer = client.post("/v1/score", json=body, headers=headers)
            finally:
                recording.clear()
            answer.raise_for_status()
            store.engine.dispose()
    sys.setprofile(None)
    threading.setprofile(None)  # type: ignore[arg-type]
    files = sorted(seen)
    lines = {f[len(engine_dir) :]: len(Path(f).read_text().splitlines()) for f in files}
    return {"files": len(files), "lines": sum(lines.values()), "per_file": lines}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--json", action="store_true", help="print every file and its lines")
    args = parser.parse_args(argv)
    result = trace_request(args.root)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"POST /v1/score crosses {result['files']} files, {result['lines']} lines")


if __name__ == "__main__":
    main()
