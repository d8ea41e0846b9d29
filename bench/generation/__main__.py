"""``python -m bench.generation``."""

from __future__ import annotations

from bench.generation.run import main

raise SystemExit(main())
