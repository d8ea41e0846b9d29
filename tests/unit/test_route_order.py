"""``POST /v1/score`` is the first route the app tries: routes are matched in the order
they were included, and each router tried before costs every call a match of each of its
routes (about 40 µs a call with three routers ahead of it)."""

from __future__ import annotations

from pathlib import Path

from starlette.routing import Match

from engine.app import create_app
from engine.settings import Settings


def test_score_is_matched_by_the_first_router_tried(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path, database_url=f"sqlite:///{tmp_path}/s.db"))
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/score",
        "root_path": "",
        "headers": [],
        "query_string": b"",
    }
    tried = []
    for route in app.router.routes:
        match, _ = route.matches(scope)
        tried.append(getattr(route, "path", type(route).__name__))
        if match is Match.FULL:
            break
    # the app's own /openapi.json route comes first; then the score router answers
    assert tried == ["/openapi.json", "_IncludedRouter"], tried
