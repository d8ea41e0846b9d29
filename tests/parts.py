"""The parts underneath scorebox, stopped and started again from a test: a PostgreSQL
server (``scripts/postgres.sh``) and the host's Docker engine (by dockerd's PID)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POSTGRES_SH = ROOT / "scripts" / "postgres.sh"


class PostgresServer:
    """A PostgreSQL server started by ``scripts/postgres.sh`` (its URL): pause and resume."""

    def __init__(self, url: str) -> None:
        self.url = url

    def _run(self, command: str) -> None:
        subprocess.run(["bash", str(POSTGRES_SH), command, self.url], check=True, timeout=120)

    def pause(self) -> None:
        """Stop the server (fast shutdown: connections are cut), keeping its data."""
        self._run("pause")

    def resume(self) -> None:
        """Start it again on the same port and data."""
        self._run("resume")


class DockerEngine:
    """The host's own ``dockerd``, stopped by its PID and started again with the same
    command line (as ``scripts/dev.sh`` starts it), or through systemd where it runs it."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.argv: list[str] = []

    @staticmethod
    def _pid() -> int:
        out = subprocess.run(["pidof", "dockerd"], capture_output=True, text=True, check=False)
        pids = out.stdout.split()
        assert len(pids) == 1, f"expected one dockerd, found {pids or 'none'}"
        return int(pids[0])

    @staticmethod
    def _systemd() -> bool:
        if not Path("/run/systemd/system").exists():
            return False
        state = subprocess.run(
            ["systemctl", "is-active", "docker"], capture_output=True, text=True, check=False
        )
        return state.stdout.strip() == "active"

    @staticmethod
    def answers() -> bool:
        probe = subprocess.run(["docker", "info"], capture_output=True, timeout=30, check=False)
        return probe.returncode == 0

    def stop(self) -> None:
        """SIGTERM to dockerd (it stops its containers), then wait for it to exit."""
        if self._systemd():
            subprocess.run(["systemctl", "stop", "docker"], check=True, timeout=120)
            return
        pid = self._pid()
        self.argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 90
        while Path(f"/proc/{pid}").exists():
            assert time.monotonic() < deadline, "dockerd did not exit within 90 s of SIGTERM"
            time.sleep(0.2)

    def start(self) -> None:
        """Start dockerd again and wait until it answers."""
        if self._systemd():
            subprocess.run(["systemctl", "start", "docker"], check=True, timeout=120)
        else:
            assert self.argv, "stop() first"
            with self.log.open("ab") as out:
                subprocess.Popen(  # its own session: it outlives this test, as before
                    self.argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                )
        deadline = time.monotonic() + 90
        while not self.answers():
            assert time.monotonic() < deadline, f"dockerd did not come back:\n{self.log}"
            time.sleep(0.3)
