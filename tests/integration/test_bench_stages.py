"""``python -m bench.service_path --stages`` on a real server: every stage of a run is
counted (the figures themselves are the machine's, never asserted)."""

from __future__ import annotations

import json

import pytest

from bench import service_path, stage_cpu
from engine.settings import Settings
from tests.conftest import TEST_LABEL

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_the_service_path_by_stage_counts_every_stage_of_a_run(
    docker_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SCOREBOX_CONTAINER_LABELS", json.dumps({TEST_LABEL: "1"}))
    result = service_path.measure(1_200, stages=True)  # three chunks of 500 rows and less
    lines = {line["stage"]: line for line in result["stages"]}
    assert list(lines)[:-1] == list(stage_cpu.STAGES)
    calls = {stage: line["calls"] for stage, line in lines.items()}
    assert calls["POST /v1/runs: check the rows"] == 1
    assert calls["POST /v1/runs: store the run and its rows"] == 1
    assert calls["GET /v1/runs/{id} (the polls)"] >= 1
    for stage in (
        "chunk: the rest (usage, metrics, the writer)",
        "chunk: read its rows without a result",
        "chunk: sandbox job, host side (encode, records, blocks)",
        "chunk: write its results",
    ):
        assert calls[stage] == 3, (stage, calls)
    assert calls["chunk: the container's attach socket (send, receive)"] >= 6  # a send, a receive
    for stage in stage_cpu.STAGES:
        assert lines[stage]["cpu_us_per_row"] >= 0, lines[stage]  # self time: never below 0
    monkeypatch.setattr("sys.argv", ["service_path", "--rows", "600", "--stages"])
    service_path.main()
    printed = capsys.readouterr().out
    for stage in stage_cpu.STAGES:
        assert stage in printed
