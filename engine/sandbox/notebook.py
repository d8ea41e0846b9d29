"""The notebook API: module-level ``run_check``, ``iter_check``, ``score_table`` and
``run_checks`` on shared, warm runners (``engine.run_check`` and friends).

A notebook or script calls these without opening a :class:`SandboxRunner` itself: the first
call opens one per distinct settings (:func:`default_runner`), later calls of the same check
are served by its warm check containers, and every one is closed at interpreter exit.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from engine.contract import Policy
from engine.models import Limits, Row, RowResult
from engine.sandbox.runner import CodeCheck, SandboxRunner
from engine.sandbox.table import ScoreTable
from engine.settings import Settings

_default_lock = threading.Lock()
_defaults: dict[str, SandboxRunner] = {}


def default_runner(settings: Settings | None = None) -> SandboxRunner:
    """A shared, warm :class:`SandboxRunner` per distinct settings, opened on first use.

    ``engine.run_check`` and ``engine.run_checks`` use it, so a notebook's second
    call is served by a warm check container. Every one is closed at interpreter exit.
    """
    settings = settings or Settings()
    key = settings.model_dump_json()
    with _default_lock:
        runner = _defaults.get(key)
        if runner is None:
            if not _defaults:
                atexit.register(close_default_runners)
            runner = _defaults[key] = SandboxRunner(settings)
        return runner


def close_default_runners() -> None:
    """Close the shared runners (at exit, or to free their containers sooner)."""
    with _default_lock:
        runners = list(_defaults.values())
        _defaults.clear()
    for runner in runners:
        runner.close()


def run_check(
    source: str,
    rows: Iterable[Row | Mapping[str, Any]],
    limits: Limits | None = None,
    *,
    policy: Policy | str = Policy.STANDARD,
    settings: Settings | None = None,
    entry: str | None = None,
) -> list[RowResult]:
    """Score ``rows`` with the check in ``source``; one result per row, in order.

    Uses the shared :func:`default_runner`: the first call starts a container,
    later calls of the same check reuse its warm check container. ``entry`` names the entry
    function of a scorer file in another format where several fit
    (docs/writing-checks/formats.md).
    """
    runner = default_runner(settings)
    check = CodeCheck(source=source, policy=Policy(policy), entry=entry)
    return runner.run_check(check, rows, limits)


def iter_check(
    source: str,
    rows: Iterable[Row | Mapping[str, Any]],
    limits: Limits | None = None,
    *,
    policy: Policy | str = Policy.STANDARD,
    settings: Settings | None = None,
    entry: str | None = None,
) -> Iterator[RowResult]:
    """Score ``rows`` as they are read with the check in ``source``, yielding results in order.

    :func:`run_check` for datasets too big to hold: memory stays bounded by a few
    jobs of rows (:meth:`SandboxRunner.iter_check`), on the shared :func:`default_runner`.
    """
    runner = default_runner(settings)
    check = CodeCheck(source=source, policy=Policy(policy), entry=entry)
    return runner.iter_check(check, rows, limits)


def score_table(
    source: str,
    rows: Iterable[Row | Mapping[str, Any]] | Mapping[str, Sequence[Any]],
    limits: Limits | None = None,
    *,
    policy: Policy | str = Policy.STANDARD,
    settings: Settings | None = None,
    entry: str | None = None,
) -> ScoreTable:
    """Score ``rows`` with the check in ``source``; the results as numpy columns.

    The fast path for many rows (:meth:`SandboxRunner.score_table`), on the shared
    :func:`default_runner`. ``rows`` is an iterable of rows or a mapping of columns.
    """
    runner = default_runner(settings)
    check = CodeCheck(source=source, policy=Policy(policy), entry=entry)
    return runner.score_table(check, rows, limits)


def run_checks(
    sources: Sequence[str],
    rows: Iterable[Row | Mapping[str, Any]],
    limits: Limits | None = None,
    *,
    policy: Policy | str = Policy.STANDARD,
    settings: Settings | None = None,
) -> list[list[RowResult]]:
    """Score ``rows`` with each check in ``sources``; ``out[k][i]`` is check k on row i."""
    checks = [CodeCheck(source=s, policy=Policy(policy)) for s in sources]
    return default_runner(settings).run_checks(checks, rows, limits)
