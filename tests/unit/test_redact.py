"""Credentials in URLs are masked wherever a message may carry them."""

from __future__ import annotations

import pytest

from engine.redact import mask_credentials


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("http://user:pass@host/v1", "http://***@host/v1"),
        ("https://__token__:pypi-AgEN@index.example/simple", "https://***@index.example/simple"),
        ("https://TOKEN@host:8443/path?q=1", "https://***@host:8443/path?q=1"),
        (
            "cannot reach http://a:b@one/v1 nor https://c:d@two/x",
            "cannot reach http://***@one/v1 nor https://***@two/x",
        ),
        ("git+https://u:p%40ss@git.example/repo.git", "git+https://***@git.example/repo.git"),
        ("http://host/v1 has no credentials", "http://host/v1 has no credentials"),
        ("mail user@example.com, no URL", "mail user@example.com, no URL"),
        ("http://host/path/a@b", "http://host/path/a@b"),
    ],
)
def test_mask_credentials_hides_userinfo_and_keeps_the_rest(text: str, masked: str) -> None:
    assert mask_credentials(text) == masked


def test_no_secret_survives_masking() -> None:
    text = "the endpoint http://scorebox:s3cr3t-Passw0rd@llm.internal:8000/v1 said 400"
    out = mask_credentials(text)
    assert "s3cr3t" not in out and "scorebox:" not in out
    assert "llm.internal:8000/v1" in out
