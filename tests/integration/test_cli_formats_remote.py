"""``scorebox check push FILE.py:function --config JSON`` against a live server, and a
server run of the pushed version: the entry and the configuration reach the scorer, and a
new configuration is a new version (the server of tests/integration/test_cli_remote.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_cli_remote import Live, live

__all__ = ["live"]  # the module's live server, shared with this file's tests

pytestmark = pytest.mark.docker

GRADERS = """
def no_banned_words(output, context):
    hits = [w for w in context["config"].get("banned", []) if w in output.lower()]
    return {"pass": not hits, "score": 0.0 if hits else 1.0, "reason": ",".join(hits) or "clean"}


def always(output, context):
    return True
"""


def test_push_an_entry_with_a_configuration_and_run_it(live: Live, tmp_path: Path) -> None:
    graders = tmp_path / "graders.py"
    graders.write_text(GRADERS)
    target = f"{graders}:no_banned_words"
    pushed = live.cli("check", "push", target, "--config", '{"banned": ["refund"]}')
    assert pushed.exit_code == 0, pushed.output
    assert pushed.stdout.startswith("graders@1 code created")
    again = live.cli("check", "push", target, "--config", '{"banned": ["refund"]}')
    assert again.stdout.startswith("graders@1 code unchanged"), again.output
    config = tmp_path / "config.json"
    config.write_text('{"banned": ["guarantee"]}')
    changed = live.cli("check", "push", target, "--config", f"@{config}")
    assert changed.stdout.startswith("graders@2 code created"), changed.output
    with live.client() as client:
        first = client.get("/v1/checks/graders@1").json()
    assert (first["entry"], first["config"]) == ("no_banned_words", {"banned": ["refund"]})

    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"id": "a", "model_output": "We guarantee a refund."}) + "\n")
    out = tmp_path / "out.jsonl"
    for version, reason in (("graders@1", "refund"), ("graders@2", "guarantee")):
        ran = live.cli(
            "run", "--check", version, "--data", str(rows), "--no-progress", "--fail-on",
            "none", "-o", str(out),
        )  # fmt: skip
        assert ran.exit_code == 0, ran.output
        [record] = [json.loads(line) for line in out.read_text().splitlines()]
        assert (record["score"], record["passed"], record["explanation"]) == (0.0, False, reason)

    refused = live.cli(
        "run", "--check", str(graders), "--config", f'{graders}={{"banned": []}}',
        "--data", str(rows),
    )  # fmt: skip
    assert refused.exit_code == 2
    assert "check push FILE --config" in refused.output
