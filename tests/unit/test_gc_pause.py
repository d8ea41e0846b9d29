"""The garbage collector held off while a run's rows are read in bulk (engine.runs.gc_pause)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from engine.runs.gc_pause import paused_gc


@pytest.fixture(autouse=True)
def _enabled_after() -> Iterator[None]:
    yield
    gc.enable()


def test_the_collector_is_off_until_the_last_overlapping_pause_ends() -> None:
    gc.enable()
    first_in = threading.Event()
    second_in = threading.Event()
    first_out = threading.Event()
    seen: dict[str, bool] = {}

    def second() -> None:
        with paused_gc():
            second_in.set()
            first_out.wait(5)
            seen["after the first ended"] = gc.isenabled()

    with paused_gc():
        first_in.set()
        thread = threading.Thread(target=second)
        thread.start()
        assert second_in.wait(5)
        seen["during both"] = gc.isenabled()
    first_out.set()
    thread.join(5)
    assert seen == {"during both": False, "after the first ended": False}
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off_and_an_error_still_ends_the_pause() -> None:
    gc.disable()
    with paused_gc():
        assert not gc.isenabled()
    assert not gc.isenabled()
    gc.enable()
    with pytest.raises(RuntimeError), paused_gc():
        raise RuntimeError("the body was bad")
    assert gc.isenabled()
