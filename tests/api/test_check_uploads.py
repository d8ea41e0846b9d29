"""The checks API: a pushed check that shadows a built-in gets a warning, and a
prompt-template file uploads as a model check."""

from __future__ import annotations

import pytest

from engine.catalog.files import kind_of_file
from tests.api.conftest import TRIVIAL_CHECK, Api

TEMPLATE = "Is this reply polite? Answer PASS or FAIL.\n\nReply: {model_output}\n"


def _warnings(body: dict[str, object]) -> list[dict[str, str]]:
    found = body["warnings"]
    assert isinstance(found, list)
    return [w for w in found if w["code"] == "shadows-builtin"]


def test_pushing_a_builtins_name_warns_on_both_routes(api: Api) -> None:
    h = api.tenant()
    created = api.client.post(
        "/v1/checks", headers=h, json={"name": "conciseness", "source": TRIVIAL_CHECK}
    )
    assert created.status_code == 201, created.text
    [warning] = _warnings(created.json())
    assert warning["severity"] == "warning"
    assert warning["message"] == (
        "'conciseness' shadows the built-in conciseness; use builtin:conciseness to reach "
        "the built-in"
    )
    # unchanged content (200) still says so, and so does the multipart upload
    again = api.client.post(
        "/v1/checks", headers=h, json={"name": "conciseness", "source": TRIVIAL_CHECK}
    )
    assert again.status_code == 200 and _warnings(again.json())
    uploaded = api.client.post(
        "/v1/checks/upload",
        headers=h,
        files={"file": ("is_json.py", TRIVIAL_CHECK.encode(), "text/x-python")},
    )
    assert uploaded.status_code == 201, uploaded.text
    [warning] = _warnings(uploaded.json())
    assert "use builtin:is_json" in warning["message"]


def test_a_name_of_its_own_has_no_shadow_warning(api: Api) -> None:
    h = api.tenant()
    reply = api.client.post(
        "/v1/checks", headers=h, json={"name": "brevity", "source": TRIVIAL_CHECK}
    )
    assert reply.status_code == 201 and _warnings(reply.json()) == []


def test_a_template_file_uploads_as_a_model_check(api: Api) -> None:
    h = api.tenant()
    reply = api.client.post(
        "/v1/checks/upload",
        headers=h,
        files={"file": ("polite.txt", TEMPLATE.encode(), "text/plain")},
        data={"check_type": "pass_fail"},
    )
    assert reply.status_code == 201, reply.text  # was 422 syntax-error
    body = reply.json()
    assert (body["name"], body["kind"], body["check_type"]) == ("polite", "model", "pass_fail")
    assert body["output_data_type"] == "bool"
    assert body["prompt_template"] == TEMPLATE and body["source"] is None
    # an unknown extension with Python that defines evaluate is still code; kind overrides
    code = api.client.post(
        "/v1/checks/upload",
        headers=h,
        files={"file": ("check.txt", TRIVIAL_CHECK.encode(), "text/plain")},
        data={"kind": "code", "name": "code_in_txt"},
    )
    assert code.status_code == 201 and code.json()["kind"] == "code"
    bad = api.client.post(
        "/v1/checks/upload",
        headers=h,
        files={"file": ("x.py", TRIVIAL_CHECK.encode(), "text/x-python")},
        data={"check_type": "score"},
    )
    assert bad.status_code == 422 and "model checks" in bad.text


@pytest.mark.parametrize(
    ("filename", "text", "kind"),
    [
        ("a.py", "not python at all", "code"),
        ("a.txt", TRIVIAL_CHECK, "model"),
        ("a.md", "x", "model"),
        ("a.prompt", "x", "model"),
        ("a.tmpl", "x", "model"),
        ("a", TRIVIAL_CHECK, "code"),
        ("a.check", "class Check:\n    pass\n", "code"),
        ("a", "polite", "model"),  # valid Python, but no evaluate / Check
        ("a.j2", "Rate {model_output} from 1 to 5.", "model"),
    ],
)
def test_kind_of_file(filename: str, text: str, kind: str) -> None:
    assert kind_of_file(filename, text) == kind
