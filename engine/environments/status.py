"""What the API says about a check's environment, and the build a push starts.

An API node that scores (embedded mode) starts building a pushed check's environment in
the background, so the push returns as soon as the check is stored and the first score
finds it ready. A node that does not score (distributed mode) builds nothing: each
worker host builds on first use, and the state shown is what the workers published
(:mod:`engine.environments.hosts`).
"""

from __future__ import annotations

import logging
import threading
from typing import Literal

from pydantic import BaseModel, Field

from engine.environments.build import Environments, log_hint
from engine.environments.spec import BLOCK_MARKER, PackageRules, read_block
from engine.errors import ScoreboxError
from engine.redact import mask_credentials

log = logging.getLogger(__name__)

State = Literal["none", "ready", "building", "failed", "missing", "unknown"]


class EnvironmentStatus(BaseModel):
    """A check's declared environment: its key, state and, once built, what resolved."""

    key: str | None = None
    state: State = Field(
        description="`none`: no block; `missing`: not built yet (the first job builds it); "
        "`building`; `ready`; `failed` (see `error` and `log`); `unknown`: this node has no "
        "sandbox and no worker published lately (distributed mode: see `hosts`)"
    )
    requirements: list[str] = Field(default_factory=list)
    resolved: dict[str, str] = Field(default_factory=dict)
    size_bytes: int | None = None
    error: str | None = None
    retryable: bool = Field(
        default=False,
        description="A failed build that may pass by itself (the package index was "
        "unreachable or slow): the next use after `retry_after_seconds` builds again.",
    )
    retry_after_seconds: float | None = None
    log: str | None = Field(
        default=None,
        description="Where the build log is kept: on the server, for its operator "
        "(`scorebox env show KEY`); never a host path.",
    )
    detail: str | None = None
    hosts: dict[str, str] = Field(
        default_factory=dict,
        description="Distributed mode: the state on each worker host (`built`, `building`, "
        "`failed`, `missing`: that host builds it on first use), from what the workers "
        "published in the last 30 s.",
    )


def status_of(source: str | None, environments: Environments | None) -> EnvironmentStatus:
    """The state of ``source``'s environment on this node (None: no sandbox here)."""
    if not source or BLOCK_MARKER not in source:
        return EnvironmentStatus(state="none")
    rules = environments.rules if environments is not None else PackageRules()
    declared = read_block(source, rules)
    if declared.problems:
        problem = declared.problems[0]
        return EnvironmentStatus(state="failed", error=f"line {problem.line}: {problem.message}")
    if not declared.requirements:
        return EnvironmentStatus(state="none")
    requirements = list(declared.requirements)
    if environments is None:
        return EnvironmentStatus(
            state="unknown",
            requirements=requirements,
            detail="this node runs no sandbox: each worker builds the environment on first use",
        )
    try:
        state = environments.state(declared.requirements)
    except ScoreboxError as exc:  # e.g. the Docker engine is down: its address stays here
        log.warning("environment state of %s: %s", requirements, mask_credentials(str(exc)))
        return EnvironmentStatus(
            state="unknown",
            requirements=requirements,
            detail="the sandbox could not be asked right now: try again later",
        )
    record = state.record
    return EnvironmentStatus(
        key=state.key,
        state=state.state,
        requirements=requirements,
        resolved=dict(record.resolved) if record else {},
        size_bytes=record.size_bytes if record else None,
        error=state.error,
        retryable=state.retryable,
        retry_after_seconds=state.retry_after_seconds,
        log=log_hint(state.key) if state.key else None,
    )


def build_in_background(
    source: str, environments: Environments, tenant: str | None = None
) -> threading.Thread | None:
    """Start building ``source``'s environment in a daemon thread (None: nothing to build).

    The build counts among ``tenant``'s builds in flight (``environments.in_flight``) from
    now until it ends, so the ``environments`` quota of its next push sees it.
    """
    declared = environments.declared(source)
    if declared.problems or not declared.requirements:
        return None
    if environments.settings.packages_offline:
        return None
    requirements = declared.requirements
    if tenant is not None:
        environments.in_flight.add(tenant, requirements)

    def build() -> None:
        try:
            environments.ensure(requirements, tenant)
        except ScoreboxError as exc:  # remembered with its log; every row will say so
            log.warning("background build failed: %s", exc)
        finally:
            if tenant is not None:
                environments.in_flight.done(tenant, requirements)

    thread = threading.Thread(target=build, name="scorebox-env-build", daemon=True)
    thread.start()
    return thread
