"""The peers (epicbox, llm-sandbox), run from their own virtualenv in a subprocess.

Their image is made from the sandbox image scorebox uses, with two adaptations:
``python`` on PATH (python-is-python3) and python3-venv, which llm-sandbox needs
to make its venv, and ``sleep infinity`` as the default command, since
llm-sandbox starts the container with the image's command and then execs into it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.scorebox_side import BenchError

ROOT = Path(__file__).resolve().parents[1]
PEERS_VENV = ROOT / "bench" / ".venv-peers"
PEERS_PYTHON = PEERS_VENV / "bin" / "python"
PEER_REPOSITORY = "scorebox-bench-peers"
PEERS = ("epicbox", "llm-sandbox")

DOCKERFILE = """\
FROM {base}
USER root
RUN set -eu; apt-get update; \\
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\
        python3-venv python-is-python3; \\
    apt-get clean; rm -rf /var/lib/apt/lists/*
USER 10001:10001
CMD ["sleep", "infinity"]
"""


def available() -> str | None:
    """None when the peers' venv is ready, else what to run."""
    if not PEERS_PYTHON.exists():
        return "the peers' virtualenv is missing: run bench/setup_peers.sh"
    probe = subprocess.run(
        [str(PEERS_PYTHON), "-c", "import epicbox, llm_sandbox"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        broken = probe.stderr.strip()[-200:]
        return f"the peers' virtualenv is broken ({broken}): run bench/setup_peers.sh"
    return None


def peer_image(sandbox_image: str) -> str:
    """The peers' image for ``sandbox_image``, built once per sandbox image id."""
    found = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Id}}", sandbox_image],
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0:
        raise BenchError(f"no sandbox image {sandbox_image}: run `scorebox image build`")
    tag = f"{PEER_REPOSITORY}:{found.stdout.strip().removeprefix('sha256:')[:12]}"
    exists = subprocess.run(["docker", "image", "inspect", tag], capture_output=True, check=False)
    if exists.returncode == 0:
        return tag
    built = subprocess.run(
        ["docker", "build", "-q", "-t", tag, "-"],
        input=DOCKERFILE.format(base=found.stdout.strip()),
        capture_output=True,
        text=True,
        check=False,
    )
    if built.returncode != 0:
        raise BenchError(f"building {tag} failed: {built.stderr.strip()[-800:]}")
    return tag


def drive(peer: str, image: str, mode: str, **options: Any) -> dict[str, Any]:
    """Run ``bench.peers_driver`` in the peers' venv; its JSON answer."""
    args = [str(PEERS_PYTHON), "-m", "bench.peers_driver", "--peer", peer, "--image", image]
    args += ["--mode", mode]
    for name, value in options.items():
        args += [f"--{name}", str(value)]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BenchError(f"{peer} {mode} failed: {done.stderr.strip()[-1500:]}")
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def main() -> None:
    """``python -m bench.peers IMAGE``: build the peers' image and print its tag."""
    print(peer_image(sys.argv[1] if len(sys.argv) > 1 else "scorebox-sandbox:latest"))


if __name__ == "__main__":
    main()
