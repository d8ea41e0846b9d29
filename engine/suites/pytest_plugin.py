"""``pytest --scorebox``: run ``scorebox.yaml`` suite files as tests.

Registered as a pytest plugin (entry point ``pytest11: scorebox``). With
``--scorebox``, every ``scorebox.yaml`` pytest collects (``pytest --scorebox
path/to/scorebox.yaml``, or one in a collected directory; else the one in the
current directory) becomes one test that fails, like ``deepeval test run``, when
its checks fall below a gate: see :func:`engine.suites.testing.assert_suite`.
Nothing is imported from the engine until a suite runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.names import SUITE_FILE


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--scorebox``."""
    group = parser.getgroup("scorebox")
    group.addoption(
        "--scorebox",
        action="store_true",
        default=False,
        help="run scorebox.yaml suite files as tests (each fails when its checks fall "
        "below a gate: fail_on, thresholds, max_failures)",
    )


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A ``scorebox.yaml`` is a test file under ``--scorebox``."""
    if file_path.name == SUITE_FILE and parent.config.getoption("scorebox"):
        return SuiteFile.from_parent(parent, path=file_path)
    return None


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Under ``--scorebox`` with no suite collected, add ``./scorebox.yaml`` if there is one."""
    if not config.getoption("scorebox") or any(isinstance(i, SuiteItem) for i in items):
        return
    path = config.invocation_params.dir / SUITE_FILE
    if path.is_file():
        items.extend(SuiteFile.from_parent(session, path=path).collect())


class SuiteFile(pytest.File):
    """A suite file: one test."""

    def collect(self) -> list[pytest.Item]:
        """The suite as one item."""
        return [SuiteItem.from_parent(self, name="scorebox")]


class SuiteItem(pytest.Item):
    """Runs the suite locally and fails on its gates."""

    def runtest(self) -> None:
        """Score the suite; ``AssertionError`` lists the broken gates and failing rows."""
        from engine.suites.testing import assert_suite  # noqa: PLC0415 (only when a suite runs)

        assert_suite(self.path)

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | Any:
        """The helper's message, without a traceback of scorebox's own frames."""
        from engine.errors import ScoreboxError  # noqa: PLC0415 (only when a suite ran)

        if isinstance(excinfo.value, AssertionError | ScoreboxError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int, str]:
        """Where the test comes from."""
        return self.path, 0, f"scorebox suite {self.path.name}"
