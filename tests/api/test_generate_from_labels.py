"""``scorebox check generate --labels NAME --run RUN`` end to end against the app and the
scripted LLM server: repair is fed the rows the check and the labels disagree on among the
examples, bounded, and the held-back rows reach no prompt. Checks run in-process (the
sandboxed runs of generated checks are in tests/integration/test_generator.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.cli.generate_labels import fetch_split
from engine.cli.remote import Remote
from tests.api.conftest import Api
from tests.api.test_labels import _run
from tests.api.test_labels_cli import _cli, cli  # noqa: F401 (cli: the fixture)
from tests.fake_llm import FakeLLM
from tests.unit.test_pipeline import run_in_process

EVERY_ROW = "```python\ndef evaluate(model_output: str) -> bool:\n    return True\n```"
THIRDS = (
    "```python\ndef evaluate(model_output: str) -> bool:\n"
    "    return int(model_output.split()[-1]) % 3 != 0\n```"
)
ROW = re.compile(r'"model_output": "row (\d+)"')


@pytest.fixture
def generator_env(fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeLLM:
    """The CLI's LLM is the scripted server; its checks run in this process."""
    import generator.adapters

    monkeypatch.setenv("SCOREBOX_LLM_BASE_URL", fake_llm.base_url)
    monkeypatch.setenv("SCOREBOX_LLM_API_KEY", "k")
    monkeypatch.setenv("SCOREBOX_LLM_MAX_RETRIES", "0")
    monkeypatch.setenv("SCOREBOX_DATA_DIR", str(tmp_path))

    class InProcess:
        def __init__(self, settings: object) -> None: ...

        def close(self) -> None: ...

    monkeypatch.setattr("engine.sandbox.runner.SandboxRunner", InProcess)
    monkeypatch.setattr(generator.adapters, "engine_runner", lambda runner: run_in_process)
    return fake_llm


def test_repair_carries_the_training_disagreements_and_never_a_held_back_row(
    cli: tuple[Api, str],  # noqa: F811 (the fixture imported above)
    generator_env: FakeLLM,
) -> None:
    api, tid = cli
    human = [i % 3 != 0 for i in range(120)]  # people fail every third row: 40 of 120
    run = _run(api, tid, [True] * 120)
    api.client.put("/v1/label-names/helpful", json={"type": "bool"})
    labels = [
        {"target": {"run": run, "row": i}, "name": "helpful", "value": h, "annotator": "ann"}
        for i, h in enumerate(human)
    ]
    assert api.client.post("/v1/labels", json={"labels": labels}).status_code == 201
    generator_env.reply(EVERY_ROW).reply(THIRDS)

    r = _cli("check", "generate", "a helpful answer", "--labels", "helpful", "--run", run)

    assert r.exit_code == 0, r.output
    held = {h.row for h in fetch_split(Remote("http://t", "k"), "helpful", run, 0.3, 0).held}
    assert len(held) == 36  # 12 of the 40 fails, 24 of the 80 passes
    # no held-back row in any message of any request
    sent = [m["content"] for q in generator_env.requests for m in q["messages"]]
    assert len(generator_env.requests) == 2
    assert not {int(i) for text in sent for i in ROW.findall(text)} & held
    # the first message shows a bounded sample of the 84 examples and says so
    first = generator_env.requests[0]["messages"][1]["content"]
    assert len(ROW.findall(first)) == 40
    assert "44 more labelled examples are not shown here" in first
    # the repair message: the 28 training rows people fail, which the check passes, 20 shown
    repair = generator_env.last_message(1)
    assert "It disagrees with 28 of 84 labelled examples (56 agreed); 20 of them below" in repair
    shown = [int(i) for i in ROW.findall(repair)]
    assert len(shown) == 20 and all(not human[i] and i not in held for i in shown)
    assert repair.count("expected False, got True") == 20
    # agreement is reported again on the held-back rows, for the repaired check and the first
    assert "attempt 1: rejected: agrees with 56/84 examples" in r.output
    assert "attempt 2: accepted: agrees with 84/84 examples" in r.output
    assert "agreement on the 36 held-back rows:" in r.output
    assert "n = 36" in r.output
    assert "  kappa         1.000  [1.000, 1.000]" in r.output  # the repaired check's report
    assert (
        "held-back rows, kappa: 0.000 [0.000, 0.000] before repair, 1.000 [1.000, 1.000] after"
    ) in r.output
