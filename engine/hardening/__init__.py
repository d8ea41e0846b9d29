"""Defences at the service's HTTP edge: request bodies and URLs.

- :mod:`engine.hardening.body`: a byte limit per route family and a total deadline on
  every request body, enforced while it streams in, before authentication.
- :mod:`engine.hardening.budget`: bytes of request bodies in flight, per caller and in total.
- :mod:`engine.hardening.nul`: a NUL character in a request's path or query is a 422.
"""

from __future__ import annotations
