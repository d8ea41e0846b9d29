"""The benchmark's report on made-up figures, with its chart: latest.md has every table,
and latest.png is drawn (matplotlib, a second or more to import and draw). The statistics,
command line, targets and the report's other sections are unit-tested
(tests/unit/test_bench_report.py)."""

from __future__ import annotations

from pathlib import Path

from bench.report import render, write
from bench.suite import IN_PROCESS, REUSE_CHECK, SCORE_TABLE
from tests.unit.test_bench_report import _results


def test_report_has_every_table_and_the_chart(tmp_path: Path) -> None:
    results = _results(fast=True)
    results.failures["llm-sandbox latency"] = "RuntimeError: no venv"
    text = render(results)
    for heading in ("## Single-row latency", "## Throughput", "## runc and runsc", "## Targets"):
        assert heading in text
    assert "| POST /v1/score, 8 concurrent clients: **300 requests/s** |" in text
    assert "## Service path: 100,000 rows through POST /v1/runs" in text
    assert "| 100,000 | 0.50 | 200,000 | 4.00 |" in text
    assert f"| rows | {IN_PROCESS} | {REUSE_CHECK} | {SCORE_TABLE} |" in text
    assert "host CPU µs/row, scorebox score_table" in text
    assert "issue" not in text.lower()
    assert "llm-sandbox latency: RuntimeError: no venv" in text
    written = write(results, tmp_path)
    assert {p.name for p in written} == {"latest.md", "latest.json", "latest.png"}
    assert (tmp_path / "latest.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
