"""scripts/dev.sh's own behaviour, run with bash (each test a process): the image build's log
survives a redirect, and what `test` runs in the background fails the command when it fails."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEV_SH = ROOT / "scripts" / "dev.sh"


def test_the_image_build_keeps_a_redirected_log_intact(tmp_path: Path) -> None:
    # `tee /dev/stderr` reopened `dev.sh demo > log 2>&1` with O_TRUNC: NUL bytes, lost lines
    script = DEV_SH.read_text(encoding="utf-8")
    code = [x for x in script.splitlines() if not x.strip().startswith("#")]
    assert [x for x in code if "/dev/stderr" in x] == []
    # ensure_image's build lines, run with a stand-in `scorebox image build`
    lines = code[code.index("    local built build_log") : 1 + next(
        i for i, x in enumerate(code) if x.strip().startswith("BUILT_IMAGE=")
    )]  # fmt: skip
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    fake = venv / "bin" / "scorebox"
    fake.write_text("#!/bin/sh\nprintf 'step 1\\nstep 2\\nscorebox-sandbox:abc built\\n'\n")
    fake.chmod(0o755)
    test = tmp_path / "t.sh"
    test.write_text(
        f'set -euo pipefail\nVENV="{venv}"\nf() {{\n'
        + "\n".join(lines)
        + '\n    echo "tag=$BUILT_IMAGE" >&2\n}\necho before >&2\nf\n'
    )
    log = tmp_path / "log"
    for _ in range(5):  # an asynchronous tee would lose the order now and then
        with log.open("wb") as out:
            subprocess.run(["bash", str(test)], stdout=out, stderr=subprocess.STDOUT, check=True)
        text = log.read_bytes()
        assert b"\0" not in text
        assert text.decode().splitlines() == [
            "before",
            "step 1",
            "step 2",
            "scorebox-sandbox:abc built",
            "tag=scorebox-sandbox:abc",
        ]


def _background(tmp_path: Path, jobs: str) -> subprocess.CompletedProcess[str]:
    """dev.sh's functions (its last line, `main "$@"`, left out) with ``jobs`` run after."""
    script = DEV_SH.read_text(encoding="utf-8").rstrip("\n").splitlines()
    assert script[-1] == 'main "$@"'
    lib = tmp_path / "dev.sh"
    lib.write_text("\n".join(script[:-1]) + "\n", encoding="utf-8")
    return subprocess.run(
        ["bash", "-c", f'source "{lib}"; STATE="{tmp_path}"; {jobs}'],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_background_job_that_fails_fails_the_command_with_its_log(tmp_path: Path) -> None:
    done = _background(
        tmp_path,
        "start_in_background fine true; "
        "start_in_background broken bash -c 'echo pip said no; exit 3'; "
        "wait_for_background; echo reached",
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "reached" not in done.stdout
    assert "pip said no" in done.stderr
    assert "failed: broken (output above" in done.stderr
    assert "fine" not in done.stderr.split("failed:")[1]


def test_background_jobs_that_pass_let_the_command_go_on(tmp_path: Path) -> None:
    done = _background(
        tmp_path,
        "start_in_background a true; start_in_background b bash -c 'sleep 0.2'; "
        "wait_for_background; echo reached",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "reached"


def test_a_step_that_dies_meanwhile_stops_the_background_jobs(tmp_path: Path) -> None:
    marker = tmp_path / "finished"
    done = _background(
        tmp_path,
        f"start_in_background slow bash -c 'sleep 5; touch {marker}'; die 'setup failed'",
    )
    assert done.returncode == 1
    assert "setup failed" in done.stderr
    subprocess.run(["sleep", "6"], check=True)
    assert not marker.exists(), "the background job outlived the command"
