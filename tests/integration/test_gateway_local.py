"""`scorebox run` without a server: a .py check calls the configured LLM through the gateway."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import engine.cli.run  # noqa: F401  (loaded once, as the suite tests do)
from engine.cli import main
from engine.settings import Settings
from tests.fake_llm import FakeLLM

pytestmark = pytest.mark.docker

CHECK = """
import cohere

def evaluate(model_output):
    text = cohere.ClientV2().chat(
        model="command-a", messages=[{"role": "user", "content": model_output}]
    ).message.content[0].text
    return text.strip() == "yes"
"""


def test_local_run_serves_a_checks_model_calls_from_the_configured_llm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docker_settings: Settings, fake_llm: FakeLLM
) -> None:
    monkeypatch.setenv("SCOREBOX_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SCOREBOX_IMAGE", docker_settings.image)
    monkeypatch.setenv("SCOREBOX_CONTAINER_LABELS", json.dumps(docker_settings.container_labels))
    if docker_settings.runtime:
        monkeypatch.setenv("SCOREBOX_RUNTIME", docker_settings.runtime)
    monkeypatch.delenv("SCOREBOX_SERVER", raising=False)
    monkeypatch.setenv("SCOREBOX_LLM_BASE_URL", fake_llm.base_url)
    monkeypatch.setenv("SCOREBOX_LLM_API_KEY", "real-key")
    monkeypatch.setenv("SCOREBOX_LLM_MODEL", "fake-model")
    fake_llm.reply("yes").reply("no")
    (tmp_path / "judge.py").write_text(CHECK)
    rows = [{"model_output": "a"}, {"model_output": "b"}]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        main,
        ["run", "--check", "judge.py", "--data", "rows.jsonl", "--no-progress", "--json",
         "--no-cache", "--fail-on", "none"],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert len(fake_llm.requests) == 2
    assert fake_llm.requests[0]["model"] == "fake-model"
    [judge] = json.loads(result.output)["summary"]
    assert judge["counts"] == {"ok": 2}
    assert judge["pass_rate"] == 0.5  # "yes" for one row, "no" for the other
