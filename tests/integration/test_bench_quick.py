"""``python -m bench``'s machinery end to end on tiny sizes, without the peers.

It asserts that every line is measured and reported, never how fast anything is.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import report
from bench.suite import (
    IN_PROCESS,
    LAT_FRESH,
    LAT_IN_PROCESS,
    LAT_RUN_CHECK,
    LAT_SCORE,
    LAT_SCORE_CONCURRENT,
    LATENCY,
    REUSE_CHECK,
    REUSE_NEVER,
    SCORE_TABLE,
    SERVICE,
    SERVICE_RUN,
    THROUGHPUT,
    Bench,
    Config,
)
from engine.settings import Settings
from tests.conftest import TEST_LABEL

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_quick_bench_measures_and_reports_every_line(
    docker_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCOREBOX_CONTAINER_LABELS", json.dumps({TEST_LABEL: "1"}))
    monkeypatch.setenv("SCOREBOX_DATA_DIR", str(tmp_path / "data"))
    config = Config(
        calls=3,
        sizes=(40,),
        clients=2,
        per_client=2,
        peers=False,
        runsc="no",
        distributed=False,
        online=False,  # OTLP ingestion and online scoring: bench.bench_ingest, bench_online
        service_rows=40,
        repeats_override=1,
    )
    lines: list[str] = []
    results = Bench(config, log=lines.append).run()

    has_reuse = "reuse" in Settings.model_fields
    expected_failures = (
        set() if has_reuse else {f"{k} 40 {REUSE_CHECK}" for k in ("trivial", "realistic")}
    )
    assert set(results.failures) == expected_failures, results.failures
    for name in (LAT_IN_PROCESS, LAT_RUN_CHECK, LAT_SCORE, LAT_FRESH):
        figure = results.find(LATENCY, name)
        assert figure is not None, name
        assert len(figure.samples) == 3
    concurrent = results.find(LATENCY, LAT_SCORE_CONCURRENT)
    assert concurrent is not None
    assert len(concurrent.samples) == 4
    assert concurrent.extra["rate_per_s"] > 0
    systems = [IN_PROCESS, REUSE_NEVER, SCORE_TABLE] + ([REUSE_CHECK] if has_reuse else [])
    for kind in ("trivial", "realistic"):
        for system in systems:
            figure = results.find(THROUGHPUT, system, kind=kind, rows=40)
            assert figure is not None, (system, kind)
            assert figure.extra["peak_rss_mb"] > 0
        table = results.find(THROUGHPUT, SCORE_TABLE, kind=kind, rows=40)
        assert table is not None
        assert table.extra["host_cpu_us_per_row"] > 0
    service = results.find(SERVICE, SERVICE_RUN)
    assert service is not None
    assert service.extra["rows"] == 40
    assert service.extra["server_cpu_us_per_row"] >= 0

    written = report.write(results, tmp_path / "out")
    text = (tmp_path / "out" / "latest.md").read_text()
    assert "| engine.run_check, warm |" in text
    assert "| 40 |" in text
    assert "## Service path: 40 rows through POST /v1/runs" in text
    assert (tmp_path / "out" / "latest.png").stat().st_size > 0
    assert len(written) == 3
