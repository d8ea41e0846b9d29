"""scripts/gvisor.sh registers runsc in daemon.json idempotently, keeping every other key."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gvisor.sh"
RUNSC = {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}


def merge(config: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SCOREBOX_DOCKER_DAEMON_JSON": str(config)}
    return subprocess.run(
        ["bash", str(SCRIPT), "merge"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_merge_keeps_other_keys_and_is_idempotent(tmp_path: Path) -> None:
    config = tmp_path / "daemon.json"
    kata = {"path": "/usr/bin/kata-runtime"}
    before: dict[str, object] = {
        "log-driver": "json-file",
        "registry-mirrors": ["https://mirror.example"],
        "runtimes": {"kata": kata},
    }
    config.write_text(json.dumps(before))
    first = merge(config)
    assert (first.returncode, first.stdout.strip()) == (0, "changed"), first.stderr
    after = json.loads(config.read_text())
    assert after == {**before, "runtimes": {"kata": kata, "runsc": RUNSC}}
    text = config.read_text()
    second = merge(config)
    assert (second.returncode, second.stdout.strip()) == (0, "unchanged"), second.stderr
    assert config.read_text() == text


def test_merge_creates_a_missing_file_and_fixes_a_stale_entry(tmp_path: Path) -> None:
    config = tmp_path / "docker" / "daemon.json"
    assert merge(config).stdout.strip() == "changed"
    assert json.loads(config.read_text()) == {"runtimes": {"runsc": RUNSC}}
    config.write_text(json.dumps({"runtimes": {"runsc": {"path": "/opt/old/runsc"}}}))
    assert merge(config).stdout.strip() == "changed"
    assert json.loads(config.read_text()) == {"runtimes": {"runsc": RUNSC}}


def test_merge_refuses_a_file_it_cannot_read_and_leaves_it(tmp_path: Path) -> None:
    config = tmp_path / "daemon.json"
    for text in ("{not json", "[1, 2]", '{"runtimes": 3}'):
        config.write_text(text)
        done = merge(config)
        assert done.returncode != 0
        assert "fix it by hand" in done.stderr
        assert config.read_text() == text
