"""The data disk fills up mid-run, on a small tmpfs mounted as the data directory.

Promised, and checked here: writes fail with a clear error (503, "disk is full", with
Retry-After); nothing already stored is corrupted (SQLite's integrity check, and every
stored result is right); the run waits and resumes on its own once space is back, with
exactly one result per row; SQLite is not left locked (writes succeed after).
"""

from __future__ import annotations

import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from engine.settings import Settings
from engine.storage import open_store
from engine.tenancy import auth
from tests.faults.runs import assert_every_row_once, length_check, start_run
from tests.live_server import serve_env, serving

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROWS = 1500
CHECK = length_check(0.004, explanation_bytes=4000)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 MiB tmpfs: a data directory whose disk can be filled in a moment."""
    mount = tmp_path / "data"
    mount.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64m,mode=0755", "tmpfs", str(mount)],
        check=True,
        timeout=30,
    )
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False, timeout=30)


def _fill(disk: Path) -> Path:
    """Write a file until the disk is full; returns it (delete it to give the space back)."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as out:  # unbuffered: nothing is left to flush
        for size in (1 << 20, 4096, 1):  # then the last partial megabyte and page too
            try:
                while out.write(b"\0" * size):
                    pass
            except OSError:
                pass
    return filler


def test_the_data_disk_fills_up_mid_run(docker_settings: Settings, small_disk: Path) -> None:
    database = small_disk / "scorebox.db"
    store = open_store(f"sqlite:///{database}")
    key = auth.create_tenant(store, "disk-full").secret
    store.engine.dispose()
    env = serve_env(
        small_disk,
        docker_settings,
        SCOREBOX_RUN_CHUNK_ROWS="100",
        SCOREBOX_JOB_MAX_ROWS="100",
    )
    log = small_disk.parent / "server.log"
    refused: list[httpx.Response] = []
    kept: list[str] = []
    with (
        serving(env, log, "--log-level", "warning") as url,
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c,
    ):
        run_id = start_run(c, CHECK, ROWS)

        filler = _fill(small_disk)
        try:
            # Writes while the disk is full: SQLite may first reuse free space inside its
            # write-ahead log, so push 200 KB checks until one is refused.
            for n in range(60):
                source = CHECK + f"# {n}\n" + "# padding\n" * 20_000
                answer = c.post("/v1/checks", json={"name": f"big{n}", "source": source})
                if answer.status_code == 201:
                    kept.append(f"big{n}")
                    continue
                refused.append(answer)
                if len(refused) == 2:
                    break
            # the run's own result writes meet the full disk too: it waits, it does not fail
            deadline = time.monotonic() + 60
            while "database unavailable" not in log.read_text(errors="replace"):
                assert time.monotonic() < deadline, "the run's writes never met the full disk"
                time.sleep(0.2)
            during = c.get(f"/v1/runs/{run_id}").json()
        finally:
            filler.unlink()

        store = open_store(f"sqlite:///{database}")
        try:
            assert_every_row_once(c, store.engine, run_id, ROWS, log)
        finally:
            store.engine.dispose()
        # SQLite is not left locked: a write succeeds now that space is back
        after = c.post("/v1/checks", json={"name": "after", "source": CHECK})
        assert after.status_code == 201, after.text

    assert during["status"] == "running", during  # waiting, not failed
    assert during["progress"]["done"] < ROWS, during
    assert refused, "every write succeeded while the disk was full"
    for answer in refused:
        assert answer.status_code == 503, answer.text
        assert "disk is full" in answer.json()["detail"], answer.text
        assert answer.headers["Retry-After"].isdigit()
    with sqlite3.connect(database) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        names = [n for (n,) in conn.execute("SELECT DISTINCT name FROM check_versions ORDER BY 1")]
        assert names == sorted(["after", "len", *kept])  # nothing of a refused push kept
