"""Screenshots of the docs site, for docs/images/: its home page, a tutorial, a reference.

    .venv/bin/python scripts/docs_screenshots.py [--out docs/images]

Builds the site (``mkdocs build --strict``) into a temporary directory, serves it on a
free loopback port with ``python -m http.server``, and takes each page with the Chromium
the browser tests use (Playwright for Python, ``/usr/bin/chromium``). No network.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
#: (page path on the site, PNG name)
PAGES = (
    ("", "docs-site-home.png"),
    ("getting-started/first-check/", "docs-site-first-check.png"),
    ("operating/configuration/", "docs-site-configuration.png"),
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args()
    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory(prefix="scorebox-site-") as site:
        subprocess.run(
            [str(bin_dir / "mkdocs"), "build", "--strict", "-d", site],
            cwd=ROOT,
            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
            check=True,
        )
        port = _free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
            cwd=site,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}/"
            deadline = time.monotonic() + 30
            while True:
                try:
                    with urllib.request.urlopen(base, timeout=1):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path="/usr/bin/chromium", args=["--no-sandbox"]
                )
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                for path, name in PAGES:
                    page.goto(base + path, wait_until="networkidle")
                    page.screenshot(path=str(args.out / name))
                    print(args.out / name)
                browser.close()
        finally:
            server.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.wait(timeout=10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
