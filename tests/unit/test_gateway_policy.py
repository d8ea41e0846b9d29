"""The gateway's policy pieces without Docker: quota, settings, session answers, image wheels.
Dispatch with a model that takes its time is in tests/integration/test_gateway_policy_waits.py."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from click.testing import CliRunner

from engine.cli import main as cli
from engine.errors import InvalidRequestError, LLMUnavailableError
from engine.gateway import ModelGateway
from engine.llm import Completion, Message, Usage
from engine.llm.usage import MeteredClient, UsageMeter
from engine.sandbox.docker.image.wheels import wheel_matches
from engine.sandbox.protocol import encode_reply
from engine.settings import Settings
from engine.tenancy.quotas import effective_quotas, parse_overrides


def test_llm_tokens_per_run_accepts_zero_and_other_quotas_do_not() -> None:
    assert parse_overrides({"llm_tokens_per_run": 0}) == {"llm_tokens_per_run": 0}
    with pytest.raises(InvalidRequestError, match="at least 1"):
        parse_overrides({"rows_per_run": 0})
    with pytest.raises(InvalidRequestError, match="at least 0"):
        parse_overrides({"llm_tokens_per_run": -1})


def test_the_quota_default_comes_from_settings_and_a_tenant_overrides_it() -> None:
    settings = Settings(quota_llm_tokens_per_run=1234)
    assert effective_quotas(settings, None).llm_tokens_per_run == 1234
    assert effective_quotas(settings, {"llm_tokens_per_run": 0}).llm_tokens_per_run == 0


def test_the_cli_accepts_quota_zero_for_the_gateway(tmp_path: Any) -> None:
    env = {"SCOREBOX_DATA_DIR": str(tmp_path)}
    result = CliRunner().invoke(
        cli, ["tenant", "create", "acme", "--quota", "llm_tokens_per_run=0"], env=env
    )
    assert result.exit_code == 0, result.output
    listed = CliRunner().invoke(cli, ["tenant", "list"], env=env)
    assert "llm_tokens_per_run=0" in listed.output


def test_the_model_map_is_read_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCOREBOX_LLM_MODEL_MAP", '{"gpt-4o": "local-judge", "*": "small"}')
    assert Settings().llm_model_map == {"gpt-4o": "local-judge", "*": "small"}


class ScriptedClient:
    """An LLMClient double recording calls (the seam's contract, no HTTP)."""

    def __init__(self, text: str = "4", fail: Exception | None = None) -> None:
        self.text = text
        self.fail = fail
        self.calls: list[dict[str, Any]] = []

    def complete(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        response_format: Mapping[str, Any] | None = None,
    ) -> Completion:
        self.calls.append({"model": model, "messages": list(messages)})
        if self.fail is not None:
            raise self.fail
        return Completion(self.text, model or "?", Usage(7, 3))


OPENAI_BODY = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]})


def test_a_session_counts_spend_per_run_and_refuses_past_the_quota() -> None:
    client = ScriptedClient()
    # Each call's prompt is estimated at 9 tokens and uses 10: a third call finds 5 left.
    settings = Settings(quota_llm_tokens_per_run=25, llm_model="op")
    gateway = ModelGateway(MeteredClient(client), settings)  # as the service wraps its client
    meter = UsageMeter()
    session = gateway.session("t", "run-1", meter)
    first = session.answer("POST", "/v1/chat/completions", OPENAI_BODY)
    second = session.answer("POST", "/v1/chat/completions", OPENAI_BODY)
    third = session.answer("POST", "/v1/chat/completions", OPENAI_BODY)
    assert (first.status, second.status, third.status) == (200, 200, 403)
    assert "llm_tokens_per_run" in third.body
    assert first.served_by == "op"
    assert meter.snapshot().total_tokens == 20
    # Another run of the tenant starts from zero.
    assert (
        gateway.session("t", "run-2").answer("POST", "/v1/chat/completions", OPENAI_BODY).status
        == 200
    )


def test_an_upstream_failure_is_reported_for_the_row_and_not_retried_by_the_client() -> None:
    client = ScriptedClient(fail=LLMUnavailableError("cannot connect to the LLM endpoint"))
    session = ModelGateway(client, Settings()).session("t", "r")
    reply = session.answer("POST", "/v1/chat/completions", OPENAI_BODY)
    assert reply.status == 424  # no client SDK retries it (the host's SDK already did)
    assert reply.upstream_error is not None and "cannot connect" in reply.upstream_error


def test_a_bad_request_never_reaches_the_model() -> None:
    client = ScriptedClient()
    reply = (
        ModelGateway(client, Settings()).session("t", "r").answer("POST", "/v1/embeddings", "{}")
    )
    assert reply.status == 404 and client.calls == []


def test_reply_frames_are_length_prefixed() -> None:
    frame = encode_reply(3, 200, '{"a": 1}')
    head, _, body = frame.partition(b"\n")
    assert head == b"r" + str(len(body)).encode()
    assert json.loads(body) == {"id": 3, "status": 200, "body": '{"a": 1}'}


@pytest.mark.parametrize(
    ("filename", "fits"),
    [
        ("tokenizers-0.23.3-cp310-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", True),
        ("tokenizers-0.23.3-cp312-abi3-manylinux_2_17_x86_64.whl", False),
        ("tokenizers-0.23.3-cp310-cp310-manylinux_2_17_x86_64.whl", False),
    ],
)
def test_stable_abi_wheels_for_older_cpython_fit_the_image(filename: str, fits: bool) -> None:
    assert wheel_matches(filename, "tokenizers==0.23.3", "x86_64") is fits


@pytest.mark.parametrize("module", ["openai", "cohere", "google.genai"])
def test_model_clients_validate_without_a_no_network_warning(module: str) -> None:
    from engine.contract import Policy
    from engine.validation import validate

    report = validate(
        f"import {module}\n\ndef evaluate(model_output):\n    return True\n", Policy.STANDARD
    )
    assert report.valid
    assert all(issue.code != "unusable-import" for issue in report.warnings)
