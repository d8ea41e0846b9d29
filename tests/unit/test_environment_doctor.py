"""`scorebox doctor` warns when a private or extra package index is open to every tenant."""

from __future__ import annotations

import pytest

from engine.cli.doctor import check_packages
from engine.environments import wheels
from engine.settings import Settings


@pytest.fixture(autouse=True)
def no_pip_config(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    config: dict[str, str] = {}
    monkeypatch.setattr(wheels, "pip_config", config.get)
    return config


def test_a_private_index_without_an_allow_list_is_a_warning() -> None:
    settings = Settings(package_index_url="https://ci:TOKEN9@pkgs.internal/simple")
    finding = check_packages(settings)
    assert (finding.ok, finding.required) == (False, False)
    assert "any tenant can declare any package it serves" in finding.detail
    assert "SCOREBOX_PACKAGES_ALLOW" in finding.detail
    assert "https://***@pkgs.internal/simple" in finding.detail and "TOKEN9" not in finding.detail


def test_an_extra_index_in_pips_own_configuration_counts(no_pip_config: dict[str, str]) -> None:
    no_pip_config["global.extra-index-url"] = "https://pkgs.internal/simple"
    assert not check_packages(Settings()).ok


def test_an_allow_list_or_pypi_alone_is_fine(no_pip_config: dict[str, str]) -> None:
    assert check_packages(Settings()).ok
    no_pip_config["global.index-url"] = "https://pypi.org/simple/"
    assert check_packages(Settings()).ok
    allowed = Settings(package_index_url="https://pkgs.internal/simple", packages_allow=["x"])
    assert check_packages(allowed).ok
