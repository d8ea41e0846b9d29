"""The `environments` quota counts builds in flight (a real Docker backend, an index that
never answers so builds stay in flight): one check pushed with new spellings over and over
is refused (429) once its builds in flight and its checks' environments pass the quota,
and spellings of one requirement set are one environment."""

from __future__ import annotations

import os

import pytest

from engine.settings import Settings
from tests.api.conftest import AppFactory

pytestmark = pytest.mark.docker

BODY = "def evaluate(model_output) -> bool:\n    return True\n"


def _source(*requirements: str) -> str:
    listed = ", ".join(f'"{r}"' for r in requirements)
    return f"# /// script\n# dependencies = [{listed}]\n# ///\n" + BODY


def test_builds_in_flight_count_against_the_environments_quota(
    docker_settings: Settings,
    make_api: AppFactory,
    silent_index: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    api = make_api(
        pool_size=0,
        package_index_url=silent_index,
        env_build_timeout_seconds=15.0,
        env_max_concurrent_builds=1,
    )
    h = api.tenant(environments=2)
    statuses = []
    # a name no index has: no earlier run can have built these, and none will later
    for spelling in ("scorebox-never-built>=0.1", "scorebox-never-built>=0.2", "sbx-nb>=0.3"):
        pushed = api.client.post(
            "/v1/checks", headers=h, json={"name": "one", "source": _source(spelling)}
        )
        statuses.append(pushed.status_code)
    assert statuses == [201, 201, 429], statuses
    assert "quota `environments` of 2" in pushed.json()["detail"]
    assert "counting 2 being built" in pushed.json()["detail"]

    # Spellings of one set are one environment: no new build, no refusal.
    other = api.tenant(environments=1)
    for spelling in (
        "Scorebox_Never.Built>=1.0",
        "scorebox-never-built>=1",
        "SCOREBOX-never_built >= 1.0.0",
    ):
        pushed = api.client.post(
            "/v1/checks", headers=other, json={"name": "same", "source": _source(spelling)}
        )
        assert pushed.status_code in (200, 201), pushed.text
    state = api.client.get("/v1/checks/same/environment", headers=other).json()
    assert state["requirements"] == ["scorebox-never-built>=1"]
