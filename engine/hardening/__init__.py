"""Defences at the service's edges: request bodies, response headers, text cells.

- :mod:`engine.hardening.body`: a byte limit per route family and a total deadline on
  every request body, enforced while it streams in, before authentication.
- :mod:`engine.hardening.headers`: framing, content-type and script policy of ``/ui``.
- :mod:`engine.hardening.cells`: spreadsheet formula escaping of CSV/TSV cells.
- :mod:`engine.hardening.text`: NUL characters, which PostgreSQL text cannot hold.
"""

from __future__ import annotations
