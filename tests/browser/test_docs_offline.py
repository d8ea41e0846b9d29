"""``/docs`` rendered in chromium with every request to another
host refused (as on a machine without internet access): Swagger UI still draws
every operation, from the assets the package serves."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from tests.browser.conftest import Dashboard


def test_swagger_ui_renders_with_the_network_cut_off(page: Any, dashboard: Dashboard) -> None:
    local = urlsplit(dashboard.url).netloc
    refused: list[str] = []

    def only_local(route: Any) -> None:
        if urlsplit(route.request.url).netloc == local:
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    page.route("**/*", only_local)
    page.goto(dashboard.url + "/docs")
    page.wait_for_selector(".opblock-summary-path", timeout=60_000)
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert any("/v1/checks/upload" in p for p in paths), paths[:10]
    assert len(paths) > 20
    assert refused == []  # it did not even try another host
