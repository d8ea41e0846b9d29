"""``python -m bench.bench_dashboard``: the dashboard's row table on a 1,000,000-row run.

Builds a run of N rows with one check (SQLite in a temporary directory, or
``--database-url``), written straight into the tables, its results in blocks of
20,000 (scoring a million rows is not what this measures), and its summary stored as
the run's finish does; then times each kind of row-table page: the query the page makes
(``engine.web.table.read_page``), the row table alone and the whole run page
over HTTP (signed in, rendered, through the app in process), then
``GET /v1/runs/{id}``, the runs list and the live-progress poll. Medians and
maxima of ``--repeat`` runs (whole pages: a third of them), in milliseconds.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import insert

from engine.app import create_app
from engine.runs.summary import store_summary
from engine.settings import Settings
from engine.storage import open_store
from engine.storage.repository import new_id, utcnow
from engine.storage.result_blocks import encode_block
from engine.storage.run_blocks import row_blocks
from engine.storage.tables import ResultBlockRow, RunRow, RunRowBlock
from engine.tenancy.auth import create_tenant
from engine.web import table

STATUSES = ["ok"] * 97 + ["error", "timeout", "invalid_score"]


def build(database_url: str, rows: int, seed: int = 7) -> tuple[str, str]:
    """A tenant's key and a finished run of ``rows`` rows with one float check."""
    store = open_store(database_url)
    key = create_tenant(store, f"bench-{time.time_ns()}")
    tenant_id = key.tenant.id
    run_id = new_id("run")
    now = utcnow()
    check = {
        "kind": "code",
        "name": "quality",
        "version": 1,
        "id": None,
        "params": {},
        "output_data_type": "float",
    }
    rng = random.Random(seed)
    with store.engine.begin() as conn:
        conn.execute(
            insert(RunRow).values(
                id=run_id,
                tenant_id=tenant_id,
                status="succeeded",
                checks=[check],
                limits=None,
                labels={"bench": "dashboard"},
                row_count=rows,
                results_done=rows,  # what save_results would have counted
                error=None,
                author_key_id=None,
                created_at=now,
                started_at=now,
                finished_at=now,
            )
        )
    batch = 20_000
    for start in range(0, rows, batch):
        stop = min(start + batch, rows)
        inputs, statuses, scores = [], [], []
        extras: dict[int, dict[str, str]] = {}
        for i in range(start, stop):
            status = rng.choice(STATUSES)
            statuses.append(status)
            scores.append(round(rng.random(), 4) if status == "ok" else None)
            if status == "error":
                extras[i - start] = {"error": "ValueError: bad row"}
            inputs.append(
                {"id": f"r{i}", "model_output": f"answer number {i}", "scenario_input": f"q{i}"}
            )
        with store.engine.begin() as conn:
            blocks = [
                {"run_id": run_id, "row_start": start + a, "row_stop": start + b, "rows": text}
                for a, b, text in row_blocks(inputs)
            ]
            conn.execute(insert(RunRowBlock), blocks)
            data = encode_block(
                range(start, stop), statuses, scores, [1.0] * (stop - start), extras
            )
            conn.execute(
                insert(ResultBlockRow).values(
                    run_id=run_id,
                    check_index=0,
                    row_start=start,
                    row_stop=stop,
                    rows=stop - start,
                    data=data,
                )
            )
    t0 = time.perf_counter()
    store_summary(store, store.get_run(tenant_id, run_id))  # what the run's finish does, once
    print(f"summary computed and stored at the run's finish in {time.perf_counter() - t0:.1f} s")
    store.engine.dispose()
    return key.secret, run_id


def _time(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    fn()  # warm the cache once, as a user's second click would
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples), max(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_dashboard", description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="scorebox-bench-ui-") as tmp:
        url = args.database_url or f"sqlite:///{Path(tmp) / 'bench.db'}"
        t0 = time.perf_counter()
        key, run_id = build(url, args.rows)
        print(
            f"built a {args.rows:,}-row run in {time.perf_counter() - t0:.0f} s"
            f" ({url.split(':')[0]})"
        )
        settings = Settings(data_dir=Path(tmp), database_url=url, pool_size=0)
        few = max(3, args.repeat // 3)  # pages that computed every summary took seconds
        deep = str(int(args.rows * 0.9))
        cases = {
            "first page": (table.TableFilter(), None, ""),
            "page at row 900,000": (table.TableFilter(), deep, f"after={deep}"),
            "status=error": (table.TableFilter(status="error"), None, "status=error"),
            "status=error, deep": (
                table.TableFilter(status="error"),
                deep,
                f"status=error&after={deep}",
            ),
            "score 0.2-0.3": (
                table.TableFilter(min_score=0.2, max_score=0.3),
                None,
                "min=0.2&max=0.3",
            ),
            "sorted by score": (table.TableFilter(sort="score_desc"), None, "sort=score_desc"),
            "sorted by score, deep": (
                table.TableFilter(sort="score_desc"),
                "0.1:5",
                "sort=score_desc&after=0.1:5",
            ),
            "text search 'number 99999'": (
                table.TableFilter(text="number 99999"),
                None,
                "q=number+99999",
            ),
        }
        with TestClient(create_app(settings)) as client:
            client.post("/ui/signin", data={"api_key": key})
            db = client.app.state.services.store.engine  # type: ignore[attr-defined]
            out: list[dict[str, object]] = []
            print(
                f"{'page':32} {'query ms (median/max)':>24} {'rows page ms':>20}"
                f" {'run page ms':>16}"
            )
            for name, (f, cursor, query) in cases.items():
                q_med, q_max = _time(
                    functools.partial(table.read_page, db, run_id, f, cursor), args.repeat
                )
                frag = f"/ui/runs/{run_id}/rows?{query}"
                frag_med, frag_max = _time(functools.partial(client.get, frag), args.repeat)
                page = f"/ui/runs/{run_id}?{query}"
                p_med, p_max = _time(functools.partial(client.get, page), few)
                out.append(
                    {
                        "page": name,
                        "query_ms": [q_med, q_max],
                        "fragment_ms": [frag_med, frag_max],
                        "page_ms": [p_med, p_max],
                    }
                )
                print(
                    f"{name:32} {q_med:11.1f} / {q_max:9.1f} {frag_med:9.1f} / {frag_max:8.1f}"
                    f" {p_med:8.0f} / {p_max:5.0f}"
                )
            print(f"\n{'whole page or call':32} {'ms (median/max)':>24}")
            auth = {"Authorization": f"Bearer {key}"}
            for name, call in (
                (
                    "GET /v1/runs/{id}",
                    functools.partial(client.get, f"/v1/runs/{run_id}", headers=auth),
                ),
                ("runs list /ui/runs", functools.partial(client.get, "/ui/runs")),
                (
                    "live progress /ui/progress",
                    functools.partial(client.get, f"/ui/progress?run={run_id}"),
                ),
            ):
                med, high = _time(call, few)
                out.append({"page": name, "page_ms": [med, high]})
                print(f"{name:32} {med:11.1f} / {high:9.1f}")
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
