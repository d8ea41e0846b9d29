"""Declared dependencies at upload: a PEP 723 block is validated with line and column (422), an
undeclared import is refused naming the module and how to declare it, and the operator's
allow/deny globs apply. No Docker: nothing is built at upload."""

from __future__ import annotations

from tests.api.conftest import AppFactory

UNDECLARED = "import textstat\n\ndef evaluate(model_output) -> float:\n    return 1.0\n"
DECLARED = '# /// script\n# dependencies = ["textstat==0.7.4"]\n# ///\n' + UNDECLARED


def _issues(body: dict[str, object]) -> list[dict[str, object]]:
    errors = body.get("errors")
    assert isinstance(errors, list), body
    return errors


def test_an_undeclared_import_is_refused_at_upload(make_api: AppFactory) -> None:
    api = make_api()
    h = api.tenant()
    refused = api.client.post("/v1/checks", headers=h, json={"name": "t", "source": UNDECLARED})
    assert refused.status_code == 422, refused.text
    [issue] = [i for i in _issues(refused.json()) if i["code"] == "undeclared-import"]
    assert (issue["line"], issue["col"]) == (1, 8)
    message = str(issue["message"])
    assert "`textstat` is neither in the sandbox image nor declared" in message
    assert "not allowed" in message
    assert '# /// script\n# dependencies = ["textstat"]\n# ///' in message
    assert "model gateway" in message
    stored = api.client.post("/v1/checks", headers=h, json={"name": "t", "source": DECLARED})
    assert stored.status_code == 201, stored.text


def test_a_bad_block_and_a_denied_package_are_422_with_line_and_column(
    make_api: AppFactory,
) -> None:
    api = make_api(packages_deny=["text*"])
    h = api.tenant()
    denied = api.client.post("/v1/checks", headers=h, json={"name": "t", "source": DECLARED})
    assert denied.status_code == 422, denied.text
    [issue] = [i for i in _issues(denied.json()) if i["code"] == "package-not-allowed"]
    assert (issue["line"], issue["col"]) == (2, 20)
    assert "SCOREBOX_PACKAGES_DENY" in str(issue["message"])
    bad = DECLARED.replace('["textstat==0.7.4"]', '["textstat >>> 1"]')
    invalid = api.client.post("/v1/checks", headers=h, json={"name": "u", "source": bad})
    assert invalid.status_code == 422, invalid.text
    [issue] = [i for i in _issues(invalid.json()) if i["code"] == "dependencies-invalid"]
    assert (issue["line"], issue["col"]) == (2, 20)


def test_the_allow_list_refuses_what_it_does_not_name(make_api: AppFactory) -> None:
    api = make_api(packages_allow=["sacrebleu", "jsonpath-*"])
    h = api.tenant()
    refused = api.client.post("/v1/checks", headers=h, json={"name": "t", "source": DECLARED})
    assert refused.status_code == 422, refused.text
    assert "SCOREBOX_PACKAGES_ALLOW" in str(_issues(refused.json())[0]["message"])


def test_the_tenant_quota_on_distinct_environments(make_api: AppFactory) -> None:
    # offline: no build starts, so only the checks' environments count (builds in flight
    # count too: tests/api/test_environment_quota.py)
    api = make_api(packages_offline=True)
    h = api.tenant(environments=2)
    for name, version in (("a", "0.7.4"), ("b", "0.7.3"), ("c", "0.7.4")):
        source = DECLARED.replace("0.7.4", version)
        stored = api.client.post("/v1/checks", headers=h, json={"name": name, "source": source})
        assert stored.status_code == 201, stored.text  # c shares a's environment
    third = DECLARED.replace("0.7.4", "0.7.2")
    refused = api.client.post("/v1/checks", headers=h, json={"name": "d", "source": third})
    assert refused.status_code == 429, refused.text
    assert "quota `environments` of 2" in refused.json()["detail"]
    # a new version of `b` replaces b's environment: still two
    replaced = api.client.post("/v1/checks", headers=h, json={"name": "b", "source": third})
    assert replaced.status_code == 201, replaced.text
