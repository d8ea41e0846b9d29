"""A judge reply cache on disk for local runs (``scorebox run --local``; ``--no-cache``).

One JSON file per request key under ``<data dir>/judge-cache/``, so rerunning a
suite does not pay for the same judge calls twice.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path

from engine.llm.client import Completion, Usage


class DiskResponseCache:
    """:class:`engine.llm.client.ResponseCache` over files named by the request's key."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> Completion | None:
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
            usage = Usage(**data.pop("usage", {}))
            return Completion(**{**data, "usage": usage, "cached": True})
        except (OSError, ValueError, TypeError):
            return None

    def put(self, key: str, completion: Completion) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        document = asdict(completion)
        document.pop("cached", None)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(document, handle)
        os.replace(tmp, path)
