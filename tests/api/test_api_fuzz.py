"""schemathesis against a live `scorebox serve`: every operation of the OpenAPI document it
publishes, with an API key. No 500, no response that violates the schema, no hang.

The server is a real process on a free port (SQLite, Docker for code checks, a scripted
LLM over HTTP). Examples per operation are bounded so the whole pass stays near a minute.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.core.result import Err

from engine.storage import open_store
from engine.tenancy import auth
from tests.conftest import TEST_LABEL, _in_ci
from tests.fake_llm import FakeLLM, Reply
from tests.live_server import serving

EXAMPLES = int(os.environ.get("SCOREBOX_FUZZ_EXAMPLES", "12"))
CALL_TIMEOUT_SECONDS = 60.0  # "no hang": any single call past this fails the test
#: Schema-valid is not semantically valid here: a check whose code does not parse, a run
#: naming a check that does not exist, a template without placeholders are all 422 by design
#: (docs/service.md), so "every schema-valid request gets a 2xx" cannot hold.
EXCLUDED_CHECKS = [schemathesis.checks.positive_data_acceptance]


class LiveServer:
    """A `scorebox serve` process and the keys to call it."""

    def __init__(self, base_url: str, tenant_key: str, admin_key: str) -> None:
        self.base_url = base_url
        self.tenant_key = tenant_key
        self.admin_key = admin_key

    def headers_for(self, path: str) -> dict[str, str]:
        if path.startswith("/v1/admin"):
            return {"Authorization": f"Bearer {self.admin_key}"}
        if path.startswith("/v0"):
            return {"api-key": self.tenant_key}
        return {"Authorization": f"Bearer {self.tenant_key}"}


@pytest.fixture(scope="module")
def live_server(
    tmp_path_factory: pytest.TempPathFactory, docker_settings: Any
) -> Iterator[LiveServer]:
    data = tmp_path_factory.mktemp("fuzz")
    llm = FakeLLM().start()
    llm.responder = lambda body: Reply(text="Looks fine.\nSCORE: 4")
    admin_key = secrets.token_urlsafe(24)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SCOREBOX_", "OPENAI_"))}
    env.update(
        SCOREBOX_DATA_DIR=str(data),
        SCOREBOX_ADMIN_KEY=admin_key,
        SCOREBOX_LLM_BASE_URL=llm.base_url,
        SCOREBOX_LLM_API_KEY="fuzz",
        SCOREBOX_LLM_MODEL="fake-model",
        SCOREBOX_LLM_MAX_RETRIES="0",
        SCOREBOX_POOL_SIZE="1",
        SCOREBOX_MAX_PARALLEL_JOBS="2",
        SCOREBOX_CONTAINER_LABELS=f'{{"{TEST_LABEL}": "1"}}',
        SCOREBOX_ROW_TIMEOUT_SECONDS="2",
    )
    try:
        with serving(env, data / "serve.log", "--log-level", "warning") as base:
            store = open_store(f"sqlite:///{data / 'scorebox.db'}", migrate=False)
            tenant = auth.create_tenant(store, "fuzz")
            store.engine.dispose()
            yield LiveServer(base, tenant.secret, admin_key)
    finally:
        llm.stop()


def _fuzz(operation: Any, mode: Any, examples: int, server: LiveServer) -> list[str]:
    """Run ``examples`` generated cases of one operation; the failures, as text."""
    failures: list[str] = []

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=_in_ci(),
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate],
        database=None,
    )
    def run(case: Any) -> None:
        case.call_and_validate(
            base_url=server.base_url,
            headers=server.headers_for(case.path),
            timeout=CALL_TIMEOUT_SECONDS,
            excluded_checks=EXCLUDED_CHECKS,
        )

    try:
        run()
    except Unsatisfiable:
        pass  # nothing of this operation can be made invalid (no parameters, no body)
    except (Exception, BaseExceptionGroup) as exc:  # one failure per operation and mode
        failures.append(f"{operation.label} [{mode.value}]: {str(exc)[:1500]}")
    return failures


def test_every_operation(live_server: LiveServer) -> None:
    schema = schemathesis.openapi.from_url(f"{live_server.base_url}/openapi.json")
    failures: list[str] = []
    seen = 0
    for result in schema.get_all_operations():
        if isinstance(result, Err):
            failures.append(f"the OpenAPI document is not valid: {result.err()}")
            continue
        operation = result.ok()
        seen += 1
        failures += _fuzz(operation, GenerationMode.POSITIVE, EXAMPLES, live_server)
        failures += _fuzz(operation, GenerationMode.NEGATIVE, max(1, EXAMPLES // 2), live_server)
    assert seen >= 30, f"only {seen} operations in the OpenAPI document"
    assert not failures, f"{len(failures)} failures:\n\n" + "\n\n".join(failures[:40])
