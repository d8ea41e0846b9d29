"""/docs works offline, form fields are described, and the
OpenAPI document has no generated names (``engine__api__schemas__CheckOut``,
``Body_upload_check_v1_checks_upload_post``, ``..._v1_runs__run_id__get``)."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.api.conftest import Api

URL = re.compile(r"""(?:https?:)?//[^\s"'<>)]+""")
SCHEMA_NAME = re.compile(r"^[A-Z][A-Za-z0-9]*$")
REF = "#/components/schemas/"


def test_docs_reference_no_external_url_and_the_assets_are_served(api: Api) -> None:
    assert api.client.get("/redoc").status_code == 404  # ReDoc fetches its logo from a CDN
    for page in ("/docs",):
        reply = api.client.get(page)
        assert reply.status_code == 200, page
        html = reply.text
        assert URL.findall(html) == [], (page, URL.findall(html))
        assets = re.findall(r"""(?:src|href)="([^"]+)\"""", html)
        assert assets, page
        for asset in assets:
            assert asset.startswith("/"), asset
            served = api.client.get(asset)
            assert served.status_code == 200, asset
            assert len(served.content) > 1000, asset
    docs = api.client.get("/docs").text
    assert "/docs-assets/swagger-ui-bundle.js" in docs
    assert '"validatorUrl": null' in docs  # Swagger UI's online validator badge is off
    assert "url: '/openapi.json'" in docs


def _walk(node: Any, out: list[tuple[str, Any]], key: str = "") -> None:
    out.append((key, node))
    if isinstance(node, dict):
        for k, v in node.items():
            _walk(v, out, k)
    elif isinstance(node, list):
        for v in node:
            _walk(v, out, key)


def test_openapi_has_no_generated_names(api: Api) -> None:
    spec = api.client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    bad = [name for name in schemas if not SCHEMA_NAME.match(name)]
    assert bad == [], bad
    nodes: list[tuple[str, Any]] = []
    _walk(spec, nodes)
    refs = [v for k, v in nodes if k == "$ref"]
    assert refs and all(r.startswith(REF) and r.removeprefix(REF) in schemas for r in refs)
    ids = [op["operationId"] for item in spec["paths"].values() for op in item.values()]
    assert len(ids) == len(set(ids))
    for op_id in ids:
        assert re.fullmatch(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*", op_id), op_id
        assert not re.search(r"_(get|post|put|patch|delete)$", op_id), op_id
    text = json.dumps(spec)
    for leak in ("engine__", "Body_", "__ref__", "_v1_"):
        assert leak not in text, leak
    assert spec["paths"]["/v1/checks/upload"]["post"]["operationId"] == "upload_check"


def test_every_form_field_has_a_description(api: Api) -> None:
    spec = api.client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    forms = set()
    for item in spec["paths"].values():
        for op in item.values():
            content = (op.get("requestBody") or {}).get("content") or {}
            for media, body in content.items():
                if media in ("multipart/form-data", "application/x-www-form-urlencoded"):
                    forms.add(body["schema"]["$ref"].removeprefix(REF))
    assert {"UploadCheckForm", "UploadRunForm"} <= forms
    for form in forms:
        for field, schema in schemas[form]["properties"].items():
            assert schema.get("description"), f"{form}.{field} has no description"
    upload = schemas["UploadCheckForm"]["properties"]
    assert {"file", "name", "kind", "check_type", "policy", "tags", "description"} <= set(upload)
