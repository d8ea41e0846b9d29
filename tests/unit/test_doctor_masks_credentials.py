"""scorebox doctor's lines are pasted into tickets and CI logs: no URL credentials in them."""

from __future__ import annotations

import socket

from engine.cli.doctor import check_database, check_llm
from engine.settings import Settings


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_an_unreachable_model_endpoint_is_named_without_its_credentials() -> None:
    port = _closed_port()
    settings = Settings(llm_base_url=f"http://someone:hunter2secret@127.0.0.1:{port}/v1")
    finding = check_llm(settings)
    assert not finding.ok
    assert "hunter2secret" not in finding.detail
    assert "someone" not in finding.detail
    assert f"127.0.0.1:{port}/v1 not reachable" in finding.detail


def test_an_unreachable_database_is_named_without_its_password() -> None:
    port = _closed_port()
    url = f"postgresql+psycopg://someone:hunter2secret@127.0.0.1:{port}/scorebox"
    finding = check_database(Settings(database_url=url))
    assert not finding.ok
    assert "hunter2secret" not in finding.detail
