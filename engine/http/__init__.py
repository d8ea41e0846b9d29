"""The edges' shared kit: what the API, the dashboard and the Okareo edge all use to speak
HTTP, and nothing of any one edge.

- :mod:`engine.http.deps`: the routes' dependencies (services, caller, store, audit log);
  :mod:`engine.http.services`: the parts an app is built from, made once at start-up.
- :mod:`engine.http.problems`: the one map from domain errors to HTTP status codes.
- Middleware, outermost first: :mod:`~engine.http.request_ids`, :mod:`~engine.http.metrics`,
  :mod:`~engine.http.body` (byte limit and deadline of every body), :mod:`~engine.http.gate`
  (the caller from the headers, with :mod:`~engine.http.budget`, bytes in flight),
  :mod:`~engine.http.nul_guard` (a NUL in a URL) and :mod:`~engine.http.guard` (lone
  surrogates in JSON bodies, unknown query parameters).

The composition root (:mod:`engine.app`) stacks them; no edge imports another.
"""
