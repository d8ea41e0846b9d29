"""docs/writing-checks/formats.md shows the format table as built
(engine.contract.formats.FORMATS)."""

from __future__ import annotations

from pathlib import Path

from engine.validation.rules import format_table_markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "writing-checks" / "formats.md"


def test_docs_table_is_the_contracts_table() -> None:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("-->\n", text.index("<!-- formats-table")) + len("-->\n")
    end = text.index("<!-- /formats-table -->")
    assert text[start:end] == format_table_markdown(), (
        "docs/writing-checks/formats.md's format table is stale: paste "
        "`python -c 'from engine.validation.rules import format_table_markdown as f; print(f())'`"
    )
