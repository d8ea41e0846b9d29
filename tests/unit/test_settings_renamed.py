"""Settings renamed so that "worker" means a ``scorebox worker`` process only: the old
variables and keyword arguments are still read, with a warning naming the new one."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from engine.setting_values import RENAMED
from engine.settings import Settings


def test_every_renamed_setting_is_a_field_and_no_field_keeps_an_old_name() -> None:
    assert set(RENAMED.values()) <= set(Settings.model_fields)
    assert not set(RENAMED) & set(Settings.model_fields)
    assert [name for name in Settings.model_fields if name.startswith("worker_")] == []


def test_an_old_variable_is_read_as_the_new_one_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("SCOREBOX_WORKER_MAX_JOBS", "7")
    monkeypatch.setenv("SCOREBOX_RUN_WORKERS", "3")
    with caplog.at_level(logging.WARNING, logger="engine.settings"):
        settings = Settings()
    assert (settings.reuse_max_jobs, settings.run_threads) == (7, 3)
    assert (
        "SCOREBOX_WORKER_MAX_JOBS is deprecated: it is read as SCOREBOX_REUSE_MAX_JOBS; "
        "set that instead" in caplog.messages
    )
    assert any(m.startswith("SCOREBOX_RUN_WORKERS is deprecated") for m in caplog.messages)


def test_the_new_variable_wins_over_the_old(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("SCOREBOX_WORKER_IDLE_SECONDS", "5")
    monkeypatch.setenv("SCOREBOX_REUSE_IDLE_SECONDS", "9")
    with caplog.at_level(logging.WARNING, logger="engine.settings"):
        assert Settings().reuse_idle_seconds == 9
    assert (
        "SCOREBOX_WORKER_IDLE_SECONDS is deprecated and ignored: SCOREBOX_REUSE_IDLE_SECONDS "
        "is set" in caplog.messages
    )


def test_an_old_keyword_argument_is_read_as_the_new_one(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="engine.settings"):
        settings = Settings(worker_max_age_seconds=30.0)
    assert settings.reuse_max_age_seconds == 30.0
    assert caplog.messages == [
        "Settings(worker_max_age_seconds) is deprecated: it is read as reuse_max_age_seconds; "
        "set that instead"
    ]


def test_unset_old_names_say_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="engine.settings"):
        settings = Settings()
    assert settings.reuse_max_jobs == 1000 and settings.run_threads is None
    assert caplog.messages == []


def test_the_configuration_page_names_every_renamed_variable() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "operating" / "configuration.md"
    text = page.read_text(encoding="utf-8")
    rows = [f"| `SCOREBOX_{a.upper()}` | `SCOREBOX_{b.upper()}` |" for a, b in RENAMED.items()]
    assert [row for row in rows if row not in text] == []
