"""A suite's ``output:`` paths stay under the suite's directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.suites.file import SuiteError, load_suite, parse_suite


@pytest.mark.parametrize(
    "output", ["/tmp/x.csv", "../x.csv", "a/../../x.jsonl", "..\\\\x.tsv", "C:/x.html"]
)
def test_an_output_leaving_the_suite_directory_is_refused(output: str) -> None:
    with pytest.raises(SuiteError) as caught:
        parse_suite(f"checks: [is_json]\noutput: ['{output}']\n", "suite.yaml")
    message = str(caught.value)
    assert "suite.yaml:2: output[0]" in message
    assert "leaves the suite's directory" in message and "-o/--output" in message


def test_an_output_under_the_suite_directory_is_kept(tmp_path: Path) -> None:
    suite = tmp_path / "scorebox.yaml"
    suite.write_text("checks: [is_json]\noutput: [out/r.csv, r.jsonl]\n")
    plan = load_suite(suite)
    assert plan.outputs == (tmp_path / "out/r.csv", tmp_path / "r.jsonl")


def test_a_symlink_out_of_the_suite_directory_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    base = tmp_path / "suite"
    base.mkdir()
    (base / "link").symlink_to(outside)
    suite = base / "scorebox.yaml"
    suite.write_text("checks: [is_json]\noutput: [link/r.csv]\n")
    with pytest.raises(SuiteError, match="outside the suite's directory"):
        load_suite(suite)
