"""The CLI against a live ``scorebox serve``: ``check push`` of a code check that
shadows a built-in and of a prompt template; ``run`` with ``-o`` on a server;
``run list / show / results / cancel``; Ctrl-C on a followed run. Built-ins and model
checks only, judged by the scripted LLM server of ``tests/fake_llm.py``: no Docker.

The live server is ``tests/live_server.serving``.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result

from engine.cli import main
from engine.storage import open_store
from engine.tenancy import auth
from tests.fake_llm import MODEL, FakeLLM, Reply
from tests.live_server import CLI, serving

ROOT = Path(__file__).resolve().parents[2]
ROWS = [
    {"id": "a", "model_output": "Paris is the capital of France.", "scenario_input": "Capital?"},
    {"id": "b", "model_output": "not json", "scenario_input": "Say something"},
    {"id": "c", "model_output": '{"city": "Paris"}', "scenario_input": "As JSON"},
]


@dataclass
class Live:
    url: str
    key: str
    llm: FakeLLM
    gate: threading.Event  # judge replies wait for it while it is clear
    workdir: Path

    def env(self) -> dict[str, str]:
        return {"SCOREBOX_SERVER": self.url, "SCOREBOX_API_KEY": self.key}

    def cli(self, *args: str) -> Result:
        return CliRunner(env=self.env()).invoke(main, list(args), catch_exceptions=False)

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.key}"}, timeout=60
        )


def _judge(gate: threading.Event) -> Any:
    def respond(body: dict[str, Any]) -> Reply:
        gate.wait(timeout=120)
        prompt = json.dumps(body["messages"])
        if "polite" in prompt:
            return Reply(text="It is courteous.\nRESULT: PASS")
        return Reply(text="Reads well.\nSCORE: 4")

    return respond


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """``scorebox serve`` on a free loopback port with the scripted LLM; SIGTERM after."""
    workdir = tmp_path_factory.mktemp("cli-remote")
    database_url = f"sqlite:///{workdir / 'scorebox.db'}"
    store = open_store(database_url)
    key = auth.create_tenant(store, "cli").secret
    store.engine.dispose()
    gate = threading.Event()
    gate.set()
    llm = FakeLLM().start()
    llm.responder = _judge(gate)
    env = {
        **os.environ,
        "SCOREBOX_DATA_DIR": str(workdir),
        "SCOREBOX_DATABASE_URL": database_url,
        "SCOREBOX_POOL_SIZE": "0",
        "SCOREBOX_MAX_PARALLEL_JOBS": "2",
        "SCOREBOX_LLM_BASE_URL": llm.base_url,
        "SCOREBOX_LLM_API_KEY": "test-key",
        "SCOREBOX_LLM_MODEL": MODEL,
        "SCOREBOX_LLM_MAX_RETRIES": "0",
        "SCOREBOX_LLM_CONCURRENCY": "2",
    }
    try:
        with serving(env, workdir / "server.log") as url:
            yield Live(url, key, llm, gate, workdir)
    finally:
        gate.set()
        llm.stop()


def _fresh(n: int) -> list[dict[str, Any]]:
    """Rows no judge has seen (the server caches judge replies by prompt)."""
    tag = time.monotonic_ns()
    return [{"id": f"r{i}", "model_output": f"answer {tag}-{i}"} for i in range(n)]


def _rows_file(tmp_path: Path, rows: list[dict[str, Any]] = ROWS) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# --- check push -----------------------------------------------------------------------------------


def test_push_warns_when_a_check_shadows_a_builtin(live: Live, tmp_path: Path) -> None:
    own = live.cli("check", "push", str(ROOT / "examples" / "checks" / "brevity.py"))
    assert own.exit_code == 0, own.output
    assert "warning" not in own.stderr
    shadow = tmp_path / "conciseness.py"
    shadow.write_text("def evaluate(model_output: str) -> bool:\n    return True\n")
    pushed = live.cli("check", "push", str(shadow))
    assert pushed.exit_code == 0, pushed.output
    assert pushed.stdout.startswith("conciseness@1 code created")
    assert (
        "warning [shadows-builtin] 'conciseness' shadows the built-in conciseness; "
        "use builtin:conciseness to reach the built-in"
    ) in pushed.stderr


def test_push_a_prompt_template_and_run_it(live: Live, tmp_path: Path) -> None:
    template = tmp_path / "polite.txt"
    template.write_text("Is this reply polite? Answer RESULT: PASS or FAIL.\n\n{model_output}\n")
    pushed = live.cli("check", "push", str(template), "--check-type", "pass_fail")
    assert pushed.exit_code == 0, pushed.output  # was HTTP 422 syntax-error
    assert pushed.stdout.startswith("polite@1 model created")
    shown = live.cli("check", "show", "polite", "--json")
    body = json.loads(shown.stdout)
    assert (body["kind"], body["check_type"], body["output_data_type"]) == (
        "model",
        "pass_fail",
        "bool",
    )
    out = tmp_path / "r.jsonl"
    ran = live.cli("run", "--check", "polite", "--data", str(_rows_file(tmp_path)), "-o", str(out))
    assert ran.exit_code == 0, ran.output
    assert [json.loads(x)["score"] for x in out.read_text().splitlines()] == [True] * 3


# --- remote runs, and run list / show / results / cancel ------------------------------------------


def test_remote_run_writes_every_output_and_the_run_commands_work(
    live: Live, tmp_path: Path
) -> None:
    outputs = [tmp_path / "r.jsonl", tmp_path / "r.csv", tmp_path / "report.html"]
    args = ["run", "--check", "is_json", "--check", "fluency", "--label", "suite=cli"]
    args += ["--data", str(_rows_file(tmp_path)), "--no-progress"]
    for path in outputs:
        args += ["-o", str(path)]
    ran = live.cli(*args)
    assert ran.exit_code == 0, ran.output
    records = [json.loads(x) for x in outputs[0].read_text().splitlines()]
    assert [(r["row_id"], r["check"], r["score"]) for r in records] == [  # row by row
        ("a", "is_json", False),
        ("a", "fluency", 4),
        ("b", "is_json", False),
        ("b", "fluency", 4),
        ("c", "is_json", True),
        ("c", "fluency", 4),
    ]
    assert records[2]["scenario_input"] == "Say something"
    assert records[3]["explanation"] == "Reads well."
    table = list(csv.DictReader(outputs[1].open()))
    assert [r["score"] for r in table] == ["false", "4", "false", "4", "true", "4"]
    assert "<svg" in outputs[2].read_text() and "fluency" in outputs[2].read_text()
    run_id = ran.stderr.split("run ", 1)[1].split()[0]
    assert run_id.startswith("run_")

    listed = live.cli("run", "list", "--label", "suite=cli", "--json")
    assert [r["id"] for r in json.loads(listed.stdout)] == [run_id]
    assert live.cli("run", "list", "--label", "suite=none", "--json").stdout.strip() == "[]"
    plain = live.cli("run", "list", "--status", "succeeded")
    assert run_id in plain.stdout and "suite=cli" in plain.stdout

    shown = live.cli("run", "show", run_id)
    assert shown.exit_code == 0 and "succeeded" in shown.stdout and "fluency" in shown.stdout
    assert json.loads(live.cli("run", "show", run_id, "--json").stdout)["id"] == run_id

    streamed = live.cli("run", "results", run_id)
    assert [json.loads(x)["score"] for x in streamed.stdout.splitlines()] == [
        False,
        4,
        False,
        4,
        True,
        4,
    ]
    saved = tmp_path / "again.csv"
    assert live.cli("run", "results", run_id, "-o", str(saved)).exit_code == 0
    assert [r["score"] for r in csv.DictReader(saved.open())] == [r["score"] for r in table]

    missing = live.cli("run", "show", "run_nope")
    assert missing.exit_code == 1 and "HTTP 404" in missing.output


def test_run_cancel_stops_a_running_run(live: Live, tmp_path: Path) -> None:
    live.gate.clear()  # judges wait: the run stays running
    try:
        with live.client() as client:
            started = client.post("/v1/runs", json={"checks": ["fluency"], "rows": _fresh(12)})
            assert started.status_code == 202, started.text
            run_id = started.json()["id"]
        cancelled = live.cli("run", "cancel", run_id)
        assert cancelled.exit_code == 0, cancelled.output
        assert cancelled.stdout.strip() == f"run {run_id}: cancelled"
    finally:
        live.gate.set()
    shown = json.loads(live.cli("run", "show", run_id, "--json").stdout)
    assert shown["status"] == "cancelled"


# --- Ctrl-C on a followed remote run --------------------------------------------------------------


def test_ctrl_c_prints_the_run_id_and_exits_without_a_tty(live: Live, tmp_path: Path) -> None:
    """SIGINT while following: the id and the follow/cancel commands, exit 130, no question
    (stdin is not a terminal), and the run goes on on the server."""
    live.gate.clear()
    data = _rows_file(tmp_path, _fresh(12))
    proc = subprocess.Popen(
        [
            *CLI,
            "run",
            "--check",
            "fluency",
            "--data",
            str(data),
            "--no-progress",
        ],
        env={**os.environ, **live.env()},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()  # "run run_... submitted (...)": it follows the run now
        assert first.startswith("run run_") and "submitted" in first, first
        run_id = first.split()[1]
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)  # it must not wait for an answer
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        live.gate.set()
    assert proc.returncode == 130, (out, err)
    assert f"interrupted; run {run_id} goes on on the server" in err
    assert f"scorebox run show {run_id}" in err
    assert f"scorebox run cancel {run_id}" in err
    assert "cancel the run now?" not in err and "Aborted!" not in err
    with live.client() as client:
        deadline = time.monotonic() + 120
        while (status := client.get(f"/v1/runs/{run_id}").json()["status"]) in (
            "queued",
            "running",
        ):
            assert time.monotonic() < deadline, "the run did not finish"
            time.sleep(0.2)
    assert status == "succeeded"  # Ctrl-C did not cancel it
