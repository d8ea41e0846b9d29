"""``/ui``: the dashboard's pages. Thin: parse, call the same services as the API, render.

One module a page family, each with its own router under ``/ui``: ``root`` (``/`` itself:
a browser to the dashboard, an API client to a JSON index), ``home`` (sign-in,
health), ``runs`` (runs, rows, export), ``compare``, ``checks`` (list, editor,
generate form), ``labelling`` (agreement, annotation queue), ``traces`` (spans
received over OTLP, a trace as a tree), ``live`` (rules, a rule's Live page).
``router`` gathers them; ``engine.web.install`` mounts it.
"""

from __future__ import annotations

from fastapi import APIRouter

from engine.web import checks, compare, home, labelling, live, root, runs, traces
from engine.web.pages import SignInRequired

__all__ = ["SignInRequired", "router"]

router = APIRouter(include_in_schema=False)
for _family in (root, home, runs, compare, checks, labelling, traces, live):
    router.include_router(_family.router)
