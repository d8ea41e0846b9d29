"""``/``: a browser goes to the dashboard, an API client gets a JSON index."""

from __future__ import annotations

import pytest

from engine.web.root import wants_html
from tests.api.conftest import Api

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8"


def test_a_browser_is_sent_to_the_dashboard(api: Api) -> None:
    reply = api.client.get("/", headers={"Accept": BROWSER}, follow_redirects=False)
    assert reply.status_code == 303 and reply.headers["location"] == "/ui/runs"
    # signed out, the runs page sends it on to the sign-in form, and back after
    onward = api.client.get("/ui/runs", follow_redirects=False)
    assert onward.headers["location"] == "/ui/signin?next=/ui/runs"


def test_an_api_client_gets_an_index(api: Api) -> None:
    for accept in ("*/*", "application/json", None):
        headers = {"Accept": accept} if accept else {}
        reply = api.client.get("/", headers=headers, follow_redirects=False)
        assert reply.status_code == 200, accept
        body = reply.json()
        assert body["name"] == "scorebox" and body["version"] == api.client.app.version  # type: ignore[attr-defined]
        assert body["links"] == {
            "docs": "/docs",
            "openapi": "/openapi.json",
            "dashboard": "/ui",
            "health": "/healthz",
        }
        for link in body["links"].values():
            assert api.client.get(link, follow_redirects=True).status_code == 200, link


@pytest.mark.parametrize(
    ("accept", "html"),
    [
        (BROWSER, True),
        ("text/html", True),
        ("application/xhtml+xml;q=0.9", True),
        ("*/*", False),
        ("application/json", False),
        ("", False),
        ("text/htmlx", False),
    ],
)
def test_wants_html(accept: str, html: bool) -> None:
    assert wants_html(accept) is html
