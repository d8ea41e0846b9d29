"""Server RSS under 20 concurrent oversized bodies, before and after.

    .venv/bin/python -m bench.bench_body_limit            # 20 x 300 MB, writes results/body_limit.*
    .venv/bin/python -m bench.bench_body_limit --size-mb 30 --clients 4   # a quick look
    .venv/bin/python -m bench.bench_body_limit --junk-key     # 20 x 31.9 MB, a junk key

Each line starts a fresh ``scorebox serve`` (SQLite in a temp dir, no containers) and
sends ``--clients`` concurrent ``POST /v1/score`` bodies of ``--size-mb`` MB with no API
key, as the attack did, from raw sockets (nothing is held in the client). It samples
the server's RSS every 20 ms and reports its baseline and peak.

- **before**: the code before the limit (``--before-ref``, default the merge base of
  HEAD and ``main``), its ``engine`` and ``generator`` packages taken with ``git archive``
  into a temporary directory and served from there with the same virtualenv:
  ``SurrogateGuard`` joins each body and FastAPI parses it before the 401. So the shared
  machine survives, this server runs under ``RLIMIT_AS`` (``--before-cap-gb``): a peak at
  the cap means it would have grown further.
- **after**, the defaults (32 MB), with no credentials header (the attack: a 401 before
  a byte of the body is read) and with an unknown key (the limit applies before the key
  is looked up): a declared ``Content-Length`` over the limit is a 413 unread; a chunked
  body is counted while it streams and cut off at the limit.

``--junk-key`` measures the bodies just under the limit (20 x 31.9 MB by default) that
carry ``Authorization: Bearer`` with a key that does not exist, into
``results/body_junk_key.*``. **before** (``--before-ref``, here default ``HEAD``): the
key is looked up by the route, after FastAPI has read and parsed the body. **after**
(the working tree): the key is resolved from the headers before a byte of the body is
read, so every answer is a 401 and the RSS stays flat.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.http_side import CLI, free_port

BLOCK = 1024 * 1024
RESULTS = Path(__file__).resolve().parent / "results"


@dataclass
class Line:
    name: str
    how: str
    key: str
    clients: int
    size_mb: float
    baseline_mb: float = 0.0
    peak_mb: float = 0.0
    statuses: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _serve(
    env: dict[str, str], cap_gb: float | None, log: Path, code: Path | None
) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()

    def limit() -> None:  # in the child, before exec
        if cap_gb is not None:
            cap = int(cap_gb * 1024**3)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    proc = subprocess.Popen(
        [*CLI, "serve", "--port", str(port), "--log-level", "error"],
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        preexec_fn=limit,  # noqa: PLW1509 (only setrlimit: no lock taken)
        cwd=code,  # python -c puts the working directory first on sys.path
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"scorebox serve exited: {log.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n")
                if b" 200 " in sock.recv(100):
                    return proc, port
        except OSError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError("scorebox serve did not answer in 120 s")


def _attack(port: int, size: int, chunked: bool, key: bool, timeout: float) -> str:
    """One unauthenticated JSON body of ``size`` bytes; the status the server answered."""
    prefix = b'{"checks": ["x"], "rows": [{"model_output": "'
    suffix = b'"}]}'
    filler = size - len(prefix) - len(suffix)
    framing = b"Transfer-Encoding: chunked" if chunked else b"Content-Length: %d" % size
    credentials = b"Authorization: Bearer sbx_bench_unknown_key\r\n" if key else b""
    head = (
        b"POST /v1/score HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
        + credentials
        + framing
        + b"\r\n\r\n"
    )
    block = b"a" * BLOCK
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(head)

            def send(data: bytes) -> None:
                if chunked:
                    sock.sendall(b"%x\r\n" % len(data) + data + b"\r\n")
                else:
                    sock.sendall(data)

            try:
                send(prefix)
                left = filler
                while left > 0:
                    step = min(BLOCK, left)
                    send(block[:step])
                    left -= step
                send(suffix)
                if chunked:
                    sock.sendall(b"0\r\n\r\n")
            except OSError:
                pass  # the server answered and closed: read what it said
            answer = sock.recv(200)
    except OSError as exc:
        return f"error:{exc.__class__.__name__}"
    parts = answer.split(b" ", 2)
    return parts[1].decode() if len(parts) > 1 else "no answer"


def measure(
    name: str,
    how: str,
    key: bool,
    env: dict[str, str],
    clients: int,
    size_mb: float,
    cap_gb: float | None,
    code: Path | None = None,
) -> Line:
    line = Line(name, how, "unknown key" if key else "none", clients, size_mb)
    with tempfile.TemporaryDirectory(prefix="scorebox-bodies-") as tmp:
        run_env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("SCOREBOX_")},
            "SCOREBOX_DATA_DIR": tmp,
            "SCOREBOX_POOL_SIZE": "0",
            **env,
        }
        proc, port = _serve(run_env, cap_gb, Path(tmp) / "serve.log", code)
        try:
            time.sleep(1.0)
            line.baseline_mb = _rss_mb(proc.pid)
            peak = [line.baseline_mb]
            done = threading.Event()

            def sample() -> None:
                while not done.is_set():
                    peak[0] = max(peak[0], _rss_mb(proc.pid))
                    time.sleep(0.02)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            statuses: list[str] = []
            lock = threading.Lock()

            def one() -> None:
                status = _attack(port, int(size_mb * BLOCK), how == "chunked", key, timeout=600)
                with lock:
                    statuses.append(status)

            started = time.monotonic()
            threads = [threading.Thread(target=one) for _ in range(clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            line.seconds = round(time.monotonic() - started, 1)
            time.sleep(0.5)
            done.set()
            sampler.join()
            line.peak_mb = round(peak[0], 1)
            line.baseline_mb = round(line.baseline_mb, 1)
            line.statuses = {s: statuses.count(s) for s in sorted(set(statuses))}
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    return line


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--size-mb", type=float, default=None, help="default 300 (31.9)")
    parser.add_argument(
        "--junk-key", action="store_true", help="bodies under the limit with an unknown key"
    )
    parser.add_argument("--before-cap-gb", type=float, default=6.0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--before-ref", default=None, help="default: git merge-base HEAD main")
    args = parser.parse_args(argv)
    repo = Path(__file__).resolve().parent.parent
    default_ref = "HEAD" if args.junk_key else "merge-base"
    ref = args.before_ref or default_ref
    if ref == "merge-base":
        ref = _git(repo, "merge-base", "HEAD", "main").strip()
    ref = _git(repo, "rev-parse", ref).strip()
    before_code = Path(tempfile.mkdtemp(prefix="scorebox-before-"))
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", ref, "engine", "generator"],
        capture_output=True,
        check=True,
    )
    subprocess.run(
        ["tar", "-x", "-C", str(before_code)],
        input=archive.stdout,
        check=True,
    )
    n, cap = args.clients, args.before_cap_gb
    size = args.size_mb or (31.9 if args.junk_key else 300)
    name = "body_junk_key" if args.junk_key else "body_limit"
    lines = (
        [
            measure(f"before ({ref[:7]})", "content-length", True, {}, n, size, cap, before_code),
            measure("after (key before body)", "content-length", True, {}, n, size, None),
            measure("after (key before body)", "chunked", True, {}, n, size, None),
        ]
        if args.junk_key
        else [
            measure(f"before ({ref[:7]})", "content-length", False, {}, n, size, cap, before_code),
            measure("after (32 MB limit)", "content-length", False, {}, n, size, None),
            measure("after (32 MB limit)", "chunked", False, {}, n, size, None),
            measure("after (32 MB limit)", "content-length", True, {}, n, size, None),
            measure("after (32 MB limit)", "chunked", True, {}, n, size, None),
        ]
    )
    args.out.mkdir(parents=True, exist_ok=True)
    rows = [
        "| server | body framing | API key | clients x size | RSS before | peak RSS | answers "
        "| seconds |",
        "| --- | --- | --- | --- | ---: | ---: | --- | ---: |",
    ]
    for x in lines:
        answers = ", ".join(f"{k}: {v}" for k, v in x.statuses.items())
        rows.append(
            f"| {x.name} | {x.how} | {x.key} | {x.clients} x {x.size_mb:g} MB "
            f"| {x.baseline_mb:.0f} MB | {x.peak_mb:.0f} MB | {answers} | {x.seconds} |"
        )
    head = _git(repo, "rev-parse", "--short", "HEAD").strip()
    cap = (
        f"; 'before' is {ref[:7]} served from `git archive` under RLIMIT_AS = "
        f"{args.before_cap_gb:g} GB; 'after' is {head} plus the working tree"
    )
    text = (
        "\n".join(rows)
        + f"\n\nMeasured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}{cap}.\n"
    )
    (args.out / f"{name}.md").write_text(text)
    (args.out / f"{name}.json").write_text(json.dumps([asdict(x) for x in lines], indent=2))
    sys.stdout.write(text)
    shutil.rmtree(before_code, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
