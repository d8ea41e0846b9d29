"""One definition per idea: the check-name pattern, the suite names."""

from __future__ import annotations

import pytest

from tests.api.conftest import Api

SOURCE = "def evaluate(model_output: str) -> bool:\n    return len(model_output) > 3\n"


@pytest.mark.parametrize("name", ["answer length", "v1.2 check-x_y", "a"])
def test_a_name_that_saves_also_validates(api: Api, name: str) -> None:
    h = api.tenant()
    saved = api.client.post("/v1/checks", headers=h, json={"name": name, "source": SOURCE})
    assert saved.status_code == 201, saved.text
    checked = api.client.post(
        "/v1/checks/validate", headers=h, json={"name": name, "source": SOURCE}
    )
    assert checked.status_code == 200, checked.text
    assert checked.json()["valid"] is True


@pytest.mark.parametrize("name", [" lead", "trail ", "at@2", "x" * 101, "-dash"])
def test_a_name_that_cannot_save_cannot_validate(api: Api, name: str) -> None:
    h = api.tenant()
    saved = api.client.post("/v1/checks", headers=h, json={"name": name, "source": SOURCE})
    checked = api.client.post(
        "/v1/checks/validate", headers=h, json={"name": name, "source": SOURCE}
    )
    assert (saved.status_code, checked.status_code) == (422, 422)
