"""``engine.suites.testing.assert_scores`` called directly: its errors, data files and judges,
and the ``pytest --scorebox`` plugin's registration. The cases that run a real inner pytest
session (pytester) are in tests/integration/test_testing_helper_sessions.py, and
tests/integration/test_suite_local.py does the same with a .py check in the sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import InvalidRequestError
from engine.suites.testing import assert_scores
from tests.fake_llm import FakeLLM, Reply

ROWS = [
    {"id": "a", "model_output": "Paris is the capital.", "scenario_input": "Capital?"},
    {"id": "b", "model_output": "Lyon, I think", "scenario_input": "Capital?"},
]


@pytest.fixture(autouse=True)
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCOREBOX_DATA_DIR", str(tmp_path / "data"))
    for name in ("SCOREBOX_SERVER", "SCOREBOX_LLM_BASE_URL", "SCOREBOX_LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def test_a_misused_helper_says_what_is_wrong() -> None:
    with pytest.raises(InvalidRequestError, match=r"neither a \.py file nor a built-in"):
        assert_scores(ROWS, ["no_such_check"])
    with pytest.raises(InvalidRequestError, match="pattern"):
        assert_scores(ROWS, ["regex_match"])
    with pytest.raises(InvalidRequestError, match=r"row 1 \(rows\[0\]\): model_output is missing"):
        assert_scores([{"scenario_input": "no output"}], ["is_json"])


def test_rows_from_a_data_file_with_a_mapping(tmp_path: Path) -> None:
    data = tmp_path / "rows.csv"
    data.write_text('answer,id\n{"a": 1},one\n[2],two\n')
    report = assert_scores(data, ["is_json"], mapping={"model_output": "answer"})
    assert [r["row_id"] for r in report.records] == ["one", "two"]
    assert report.value("is_json") == 1.0
    with pytest.raises(InvalidRequestError, match="unknown column"):
        assert_scores(data, ["is_json"])


def test_local_judges_reach_the_configured_endpoint(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCOREBOX_LLM_BASE_URL", fake_llm.base_url)
    monkeypatch.setenv("SCOREBOX_LLM_API_KEY", "test-key")
    fake_llm.responder = lambda body: Reply(text="Fine.\nSCORE: 2")
    with pytest.raises(AssertionError, match="fluency: 2 < threshold 4"):
        assert_scores(ROWS, [{"name": "fluency", "threshold": 4}], no_cache=True)
    assert len(fake_llm.requests) == 2


def test_the_plugin_is_registered_through_the_pytest11_entry_point() -> None:
    from importlib.metadata import entry_points

    found = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert found.get("scorebox") == "engine.suites.pytest_plugin"
