"""``bench.stage_cpu``: its stages name real functions, a stage's time is its own (a stage
inside another is taken out of the outer one), and the figures a row add up to the server's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench import stage_cpu


def test_every_stage_names_a_function_the_engine_has() -> None:
    # a renamed engine function must fail here, not silently leave a stage at zero
    for targets in stage_cpu.STAGES.values():
        for module, owner, name in targets:
            assert callable(getattr(stage_cpu.holder(module, owner), name)), (module, owner, name)


class _Clock:
    """thread_time and perf_counter that move only when told (``tick``)."""

    def __init__(self) -> None:
        self.now = 0.0

    def tick(self, seconds: float) -> None:
        self.now += seconds

    def thread_time(self) -> float:
        return self.now

    def perf_counter(self) -> float:
        return self.now * 2  # wall: twice the CPU


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Clock]:
    fake = _Clock()
    monkeypatch.setattr(stage_cpu, "time", fake)
    yield fake


def test_a_stage_called_inside_another_is_taken_out_of_it(clock: _Clock) -> None:
    sums = stage_cpu._Sums()
    read = "chunk: read its rows without a result"
    job = "chunk: sandbox job, host side (encode, records, blocks)"
    write = "chunk: write its results"
    assert {read, job, write} <= stage_cpu.STAGES.keys()
    inner = sums.wrap(lambda: clock.tick(0.25), write)

    def streamed() -> str:
        clock.tick(1.0)
        inner()  # a write inside the job that streamed its results
        clock.tick(0.5)
        return "done"

    outer = sums.wrap(streamed, job)
    assert outer() == "done"
    sums.wrap(lambda: clock.tick(2.0), read)()
    got = sums.snapshot()
    assert got[job] == {"calls": 1, "cpu": 1.5, "wall": 3.0}
    assert got[write] == {"calls": 1, "cpu": 0.25, "wall": 0.5}
    assert got[read] == {"calls": 1, "cpu": 2.0, "wall": 4.0}


def test_a_stage_that_raises_is_counted_and_the_error_passes(clock: _Clock) -> None:
    sums = stage_cpu._Sums()
    stage = next(iter(stage_cpu.STAGES))

    def fails() -> None:
        clock.tick(0.5)
        raise ValueError("bad row")

    with pytest.raises(ValueError, match="bad row"):
        sums.wrap(fails, stage)()
    assert sums.snapshot()[stage]["cpu"] == 0.5
    assert sums.local.stack == []


def test_per_row_gives_each_stage_and_the_rest_of_the_server() -> None:
    zero = {s: {"calls": 0, "cpu": 0.0, "wall": 0.0} for s in stage_cpu.STAGES}
    after = {s: {"calls": 2, "cpu": 0.1, "wall": 0.3} for s in stage_cpu.STAGES}
    lines = stage_cpu.per_row(zero, after, rows=1000, server_cpu=1.0)
    assert [line["stage"] for line in lines[:-1]] == list(stage_cpu.STAGES)
    assert all(line["calls"] == 2 for line in lines[:-1])
    assert lines[0]["cpu_us_per_row"] == pytest.approx(100.0)
    assert lines[0]["wall_us_per_row"] == pytest.approx(300.0)
    rest = lines[-1]
    named = 0.1 * len(stage_cpu.STAGES)
    assert rest["cpu_us_per_row"] == pytest.approx((1.0 - named) / 1000 * 1e6)
    assert rest["calls"] is None and rest["wall_us_per_row"] is None
