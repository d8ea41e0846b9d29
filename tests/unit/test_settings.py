"""Settings: flat limit variables and masking for `scorebox doctor`."""

from __future__ import annotations

import pytest

from engine.models import Limits
from engine.settings import Settings


def test_masked_hides_secrets_and_the_database_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCOREBOX_DATABASE_URL", "postgresql+psycopg://user:s3cret@db/scorebox")
    monkeypatch.setenv("SCOREBOX_LLM_API_KEY", "sk-very-secret")
    masked = Settings().masked()
    assert "s3cret" not in repr(masked)
    assert "sk-very-secret" not in repr(masked)
    assert masked["database_url"] == "postgresql+psycopg://user:***@db/scorebox"
    assert masked["llm_api_key"] == "****"


def test_flat_limit_variables_set_the_default_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCOREBOX_ROW_TIMEOUT_SECONDS", "2.5")
    monkeypatch.setenv("SCOREBOX_MEMORY_MB", "128")
    limits = Settings().limits
    assert (limits.row_timeout_seconds, limits.memory_mb) == (2.5, 128)


def test_keyword_limits_win_over_the_flat_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCOREBOX_ROW_TIMEOUT_SECONDS", "7")
    monkeypatch.setenv("SCOREBOX_MEMORY_MB", "128")
    assert Settings(limits=Limits(row_timeout_seconds=1)).limits.row_timeout_seconds == 1
    merged = Settings(limits={"memory_mb": 64}).limits
    assert (merged.row_timeout_seconds, merged.memory_mb) == (7, 64)
    assert Settings().limits.row_timeout_seconds == 7


def test_keyword_arguments_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCOREBOX_LLM_MODEL", "from-env")
    assert Settings(llm_model="from-kwarg").llm_model == "from-kwarg"
    assert Settings().llm_model == "from-env"
