"""Declared environments per host without Docker: the snapshot a worker publishes (built,
building, failed with its tenant-safe message) while a fake install takes half a second in
a thread; the fakes here serve test_environment_host_processes.py too (built once by two
processes)."""

from __future__ import annotations

import fcntl
import json
import time
from collections.abc import Sequence
from pathlib import Path

from engine.environments import EnvironmentRecord, Environments
from engine.environments.hosts import MAX_ERROR_CHARS, host_snapshot
from engine.settings import Settings

REQUIREMENTS = ("textstat==0.7.4",)


class FolderInstaller:
    """A Docker engine shared by processes: one JSON file per built image in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def find_environment(self, key: str) -> EnvironmentRecord | None:
        path = self.folder / f"{key}.json"
        if not path.exists():
            return None
        data = json.loads(path.read_text())
        return EnvironmentRecord(**{**data, "requirements": tuple(data["requirements"])})

    def install_environment(
        self,
        key: str,
        wheels: Path,
        requirements: Sequence[str],
        *,
        timeout: float,
        max_bytes: int,
        log_file: Path,
    ) -> EnvironmentRecord:
        time.sleep(0.5)  # long enough for the other process to ask meanwhile
        with (self.folder / "installs").open("a") as handle:
            handle.write(key + "\n")
        record = EnvironmentRecord(
            key, tuple(requirements), {"textstat": "0.7.4"}, 10, "img:1", time.time(), 0.5
        )
        (self.folder / f"{key}.json").write_text(json.dumps(record.to_dict()))
        return record

    def list_environments(self) -> list[EnvironmentRecord]:
        keys = [p.stem for p in self.folder.glob("*.json")]
        return [r for r in map(self.find_environment, keys) if r is not None]

    def remove_environment(self, key: str) -> bool:
        return False


class NoDownload(Environments):
    """No pip: the wheels are not what is tested here."""

    def _download(self, requirements: Sequence[str], dest: Path, log_file: Path) -> None:
        pass

    def _download_pip(self, dest: Path, log_file: Path) -> None:
        pass


def test_the_host_snapshot_says_built_building_and_failed(tmp_path: Path) -> None:
    engine = tmp_path / "engine"
    engine.mkdir()
    settings = Settings(data_dir=tmp_path / "data", image="img:1")
    environments = NoDownload(settings, FolderInstaller(engine))
    built = environments.ensure(REQUIREMENTS).key
    failed = environments.key(["nope==1"])
    environments._remember_failure(failed, "environment x failed to build: no wheel " * 50)
    building = environments.key(["slow==1"])
    lock = environments.root / "locks" / f"{building}.lock"
    with lock.open("a") as handle:  # another process of the host is building it
        fcntl.flock(handle, fcntl.LOCK_EX)
        snapshot = host_snapshot(environments)
    assert snapshot[built] == {"state": "built"}
    assert snapshot[building] == {"state": "building"}
    assert snapshot[failed]["state"] == "failed"
    assert snapshot[failed]["error"].startswith("environment x failed to build: no wheel")
    assert len(snapshot[failed]["error"]) == MAX_ERROR_CHARS
    assert snapshot[failed]["retryable"] is False
    assert building not in host_snapshot(environments)  # the lock is free again: not building
