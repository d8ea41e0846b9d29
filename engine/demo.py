"""``python -m engine.demo``: the demo (``engine.cli.demo``), kept at this path for
``scripts/dev.sh demo`` and the README."""

from __future__ import annotations

import sys

from engine.cli.demo import main

if __name__ == "__main__":
    sys.exit(main())
