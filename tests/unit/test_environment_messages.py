"""pip's output said to a tenant: no index address or token, no host path, the right cause."""

from __future__ import annotations

from packaging.version import Version

from engine.environments.pip_output import (
    available_versions,
    for_tenant,
    listed_versions,
    no_wheel_message,
)

MISSING_PIN = (
    "Looking in indexes: https://user:****@pypi.example/simple\n"
    "ERROR: Could not find a version that satisfies the requirement textstat==99.0 (from "
    "versions: 0.1.6, 0.7.3, 0.7.4, 0.7.10, 0.7.2, 0.6.1, 1.0.0a1)\n"
    "ERROR: No matching distribution found for textstat==99.0\n"
)


def _versions(*texts: str) -> list[Version]:
    return sorted(Version(t) for t in texts)


ALL_TEXTSTAT = _versions("0.1.6", "0.6.1", "0.7.2", "0.7.3", "0.7.4", "0.7.10", "1.0.0a1")


def test_a_pin_to_a_version_that_does_not_exist_is_said_as_such() -> None:
    message = no_wheel_message(MISSING_PIN, ["textstat==99.0"], ALL_TEXTSTAT)
    assert "no version of `textstat` matching `textstat==99.0`" in message
    assert "No matching distribution found" in message
    assert "nearest: 0.7.4, 0.7.10)" in message  # the newest releases below 99.0, in order
    assert "fix the version in `dependencies`" in message
    assert "scorebox env wheel" not in message  # not an sdist-only package


def test_a_pin_between_versions_names_its_neighbours() -> None:
    output = MISSING_PIN.replace("textstat==99.0", "textstat==0.7.0")
    message = no_wheel_message(output, ["textstat==0.7.0"], ALL_TEXTSTAT)
    assert (
        "nearest: 0.6.1, 0.7.2, 0.7.3)" in message
        or "nearest: 0.1.6, 0.6.1, 0.7.2, 0.7.3)" in message
    )


def test_a_version_with_only_an_sdist_is_a_missing_wheel() -> None:
    """docstring-parser 0.11 exists as an sdist only: pip lists the wheels' versions, the
    index has the version: build it, not "fix the version"."""
    output = (
        "ERROR: Could not find a version that satisfies the requirement "
        "docstring-parser<0.12,>=0.11 (from versions: 0.14, 0.14.1, 0.15)\n"
        "ERROR: No matching distribution found for docstring-parser<0.12,>=0.11\n"
    )
    available = _versions("0.10", "0.11", "0.14", "0.14.1", "0.15")
    message = no_wheel_message(output, ["okareo"], available)
    assert message.startswith("no wheel of `docstring-parser<0.12,>=0.11`")
    assert "scorebox env wheel 'docstring-parser<0.12,>=0.11'" in message


def test_a_name_the_index_does_not_have_is_said_as_such() -> None:
    output = "ERROR: No matching distribution found for textsat==1.0\n"
    message = no_wheel_message(output, ["textsat==1.0"], [])
    assert message.startswith("no distribution `textsat` on the package index")
    assert "check the name" in message


def test_available_versions_reads_pip_index_versions() -> None:
    answer = "textstat (1.0.0a1)\nAvailable versions: 1.0.0a1, 0.7.13, 0.7.4\n"
    assert available_versions(answer, 0, "textstat") == _versions("0.7.4", "0.7.13", "1.0.0a1")
    assert available_versions("ERROR: No matching distribution found for x\n", 1, "x") == []
    assert available_versions("ERROR: connection refused\n", 1, "x") is None
    # pip download's own words (a requirement, not the bare name) say nothing of the index
    assert available_versions("ERROR: No matching distribution found for x==1\n", 1, "x") is None


def test_without_the_index_list_no_version_at_all_is_a_missing_wheel() -> None:
    output = (
        "ERROR: Could not find a version that satisfies the requirement langdetect==1.0.9 "
        "(from versions: none)\nERROR: No matching distribution found for langdetect==1.0.9\n"
    )
    assert listed_versions(output) == []
    message = no_wheel_message(output, ["langdetect==1.0.9"])
    assert message.startswith("no wheel of `langdetect==1.0.9`")
    assert "scorebox env wheel 'langdetect==1.0.9'" in message


def test_for_tenant_drops_urls_tokens_and_host_paths() -> None:
    text = (
        "Could not fetch URL https://ci:TOKEN123@idx.internal/simple/x/: connection refused; "
        "see /var/lib/scorebox/environments/logs/k.log"
    )
    said = for_tenant(text, ["/var/lib/scorebox"])
    assert "TOKEN123" not in said and "idx.internal" not in said
    assert "/var/lib/scorebox" not in said
    assert "Could not fetch URL the package index: connection refused" in said
