"""A run's submission reads its rows with the garbage collector held off, and only then."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from engine.agreement.required import refuse_unmet
from tests.api.conftest import Api


def test_the_collector_is_off_while_a_run_is_submitted_and_on_after(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []

    def watched(*args: Any) -> None:
        seen.append(gc.isenabled())
        refuse_unmet(*args)

    monkeypatch.setattr("engine.api.routes.runs.refuse_unmet", watched)
    h = api.tenant()
    rows = [{"model_output": "{}"}, {"model_output": "x"}]
    reply = api.client.post("/v1/runs", headers=h, json={"checks": ["is_json"], "rows": rows})
    assert reply.status_code == 202, reply.text
    upload = api.client.post(
        "/v1/runs/upload",
        headers=h,
        files={"file": ("rows.ndjson", b'{"model_output": "{}"}\n')},
        data={"checks": "is_json"},
    )
    assert upload.status_code == 202, upload.text
    assert seen == [False, False]
    assert gc.isenabled()
    assert api.client.get("/v1/runs", headers=h).status_code == 200
    assert gc.isenabled()
