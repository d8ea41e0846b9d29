"""Declared environments per host without Docker: two worker processes of one host (forked)
build an environment once; the second finds the image after taking the host's lock."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from engine.settings import Settings
from tests.integration.test_environment_hosts import REQUIREMENTS, FolderInstaller, NoDownload


def _worker_process(data_dir: str, engine: str) -> None:
    """One worker process of the host: its own Environments over the host's data dir."""
    settings = Settings(data_dir=Path(data_dir), image="img:1", env_wait_seconds=30)
    NoDownload(settings, FolderInstaller(Path(engine))).ensure(REQUIREMENTS)


def test_two_worker_processes_on_one_host_build_an_environment_once(tmp_path: Path) -> None:
    engine = tmp_path / "engine"
    engine.mkdir()
    context = multiprocessing.get_context("fork")
    workers = [
        context.Process(target=_worker_process, args=(str(tmp_path / "data"), str(engine)))
        for _ in range(2)
    ]
    for process in workers:
        process.start()
    for process in workers:
        process.join(60)
        assert process.exitcode == 0
    installs = (engine / "installs").read_text().split()
    assert len(installs) == 1  # the second process found the image after taking the lock
    assert len(list(engine.glob("*.json"))) == 1
