"""``scorebox demo``: start the service on the embedded defaults, push the example
checks, score ``examples/rows.jsonl`` through the API and print the summary.

The service runs in this process on a free local port with a new data directory
(SQLite; kept, and named at the end) unless ``--data-dir`` is given. The HTML report is
written in the data directory (``--report`` to put it elsewhere), never to a path other
users of the machine share. Exits non-zero on failure.
"""

from __future__ import annotations

import json
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    import httpx

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: The report's file name in the data directory.
REPORT_NAME = "demo-report.html"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@click.command("demo")
@click.option(
    "--examples",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=EXAMPLES,
    help="A directory with checks/*.py and rows.jsonl (default: the examples/ beside scorebox).",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the demo's database and report go (default: a new private directory).",
)
@click.option(
    "--report",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help=f"Where to write the one-file HTML report of the run (default: {REPORT_NAME} in "
    "the data directory).",
)
@click.option(
    "--serve", is_flag=True, help="Keep serving (the dashboard too) after the demo, until Ctrl-C."
)
def demo(examples: Path, data_dir: Path | None, report: Path | None, serve: bool) -> None:
    """Score the example rows with the example checks on a local service, and print the
    summary, an HTML report and the run's dashboard page."""
    raise SystemExit(run_demo(examples, data_dir, report, serve))


def run_demo(examples: Path, data_dir: Path | None, report: Path | None, serve: bool) -> int:
    """The demo; returns the exit code (0 when the run succeeded)."""
    # lazy: the service's modules are not loaded for `scorebox --help`
    import httpx  # noqa: PLC0415
    import uvicorn  # noqa: PLC0415

    from engine.app import create_app  # noqa: PLC0415
    from engine.settings import Settings  # noqa: PLC0415
    from engine.storage import open_store  # noqa: PLC0415
    from engine.tenancy.auth import create_tenant  # noqa: PLC0415

    # a directory of this run's own (mkdtemp: private, never a fixed shared path), kept so
    # its report and database can be looked at afterwards
    data_dir = data_dir or Path(tempfile.mkdtemp(prefix="scorebox-demo-"))
    report = report_path(report, data_dir)
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
            run = _score_examples(client, examples, report)
            if run is None:
                return 1
            print(dashboard_lines(base, run["id"], key, data_dir, serve))
            if serve:
                _serve_until_interrupted(thread)
            return 0 if run["status"] == "succeeded" else 1
    finally:
        server.should_exit = True
        thread.join(timeout=60)


def _score_examples(client: httpx.Client, examples: Path, report: Path) -> dict[str, Any] | None:
    """Push the example checks, run them on the example rows, print the summary and write
    the report; None (with the reason on stderr) when a step fails."""
    from engine.cli.run_manage import render_summary  # noqa: PLC0415
    from engine.runs.export import record, write_records  # noqa: PLC0415
    from engine.suites.data import read_rows  # noqa: PLC0415

    names = []
    for path in sorted((examples / "checks").glob("*.py")):
        reply = client.post("/v1/checks/upload", files={"file": (path.name, path.read_bytes())})
        if reply.status_code >= 400:
            print(f"push {path.name} failed: {reply.text}", file=sys.stderr)
            return None
        body = reply.json()
        names.append(f"{body['name']}@{body['version']}")
        print(f"pushed {body['name']}@{body['version']}")
    rows_path = examples / "rows.jsonl"
    rows = read_rows(rows_path)
    reply = client.post("/v1/runs", json={"checks": names, "rows": rows})
    if reply.status_code != 202:
        print(f"run failed to start: {reply.text}", file=sys.stderr)
        return None
    run: dict[str, Any] = reply.json()
    while run["status"] in ("queued", "running"):
        time.sleep(0.3)
        run = client.get(f"/v1/runs/{run['id']}").json()
    render_summary(run["summary"], f"{len(rows)} rows of {rows_path.name}: {run['status']}")
    results = client.get(
        f"/v1/runs/{run['id']}/results", headers={"Accept": "application/x-ndjson"}
    )
    records = [
        record(int(item["row_index"]), item, rows[int(item["row_index"])])
        for item in (json.loads(line) for line in results.text.splitlines() if line)
    ]
    report.parent.mkdir(parents=True, exist_ok=True)
    write_records(report, records, f"scorebox demo: run {run['id']}")
    print(f"HTML report: {report}")
    return run


def report_path(given: Path | None, data_dir: Path) -> Path:
    """The report's path: ``--report``, else :data:`REPORT_NAME` in the data directory."""
    return given if given is not None else data_dir / REPORT_NAME


def scorebox_command() -> str:
    """How to call ``scorebox`` from here: the one beside this Python (``.venv/bin/scorebox``,
    relative when it is under the current directory), since the venv may not be on PATH."""
    script = Path(sys.executable).parent / "scorebox"
    if not script.exists():
        return "scorebox"
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)


def dashboard_lines(base: str, run_id: str, key: str, data_dir: Path, serving: bool) -> str:
    """The last lines: where to look at this run in the dashboard, and how to sign in."""
    if serving:
        return f"dashboard: {base}/ui/runs/{run_id}  (sign in with the key {key}; Ctrl-C stops)"
    return (
        f"to browse it: SCOREBOX_DATA_DIR={data_dir} {scorebox_command()} serve, sign in with "
        f"the key {key}, then open\n"
        f"dashboard: http://127.0.0.1:8000/ui/runs/{run_id}"
    )


def _serve_until_interrupted(thread: threading.Thread) -> None:
    try:
        while thread.is_alive():
            thread.join(timeout=1)
    except KeyboardInterrupt:
        print()
