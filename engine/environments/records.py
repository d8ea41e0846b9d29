"""What crosses between the environment cache and its installer: the records of built
environments, a build's state and outcome, and the :class:`Installer` seam the Docker
backend fills (install wheels offline into a derived image, find, list, remove).

Values and a protocol only: the cache that uses them is :mod:`engine.environments.build`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

#: Repository of derived environment images (tag: the environment's key).
ENV_REPOSITORY = "scorebox-env"
#: Where an environment lives inside its image (the harness puts it first on sys.path).
ENV_PATH = "/opt/scorebox-env"


@dataclass(frozen=True)
class EnvironmentRecord:
    """A built environment: what was asked, what resolved, how big, how long it took."""

    key: str
    requirements: tuple[str, ...]
    resolved: dict[str, str]  # distribution -> version
    size_bytes: int
    base_image: str
    built_at: float
    build_seconds: float
    image: str = ""

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True)
class BuildState:
    """What ``scorebox env show`` and the API say about an environment."""

    key: str
    state: str  # "ready", "building", "failed", "missing"
    record: EnvironmentRecord | None = None
    error: str | None = None
    log_path: str | None = None
    requirements: tuple[str, ...] = field(default_factory=tuple)
    #: a failure that may pass by itself (the package index was unreachable or slow)
    retryable: bool = False
    #: seconds until the next use builds again (failed builds only)
    retry_after_seconds: float | None = None


@dataclass(frozen=True)
class RememberedFailure:
    """A failed build, remembered so every row of a check gets the same error."""

    error: str
    retryable: bool
    seconds_left: float


@dataclass(frozen=True)
class BuildOutcome:
    """One build attempt, for listeners (the audit log): who asked, what, how it ended."""

    key: str
    requirements: tuple[str, ...]
    tenant: str | None  # None: not on a tenant's behalf (the CLI, a worker's first use)
    outcome: str  # "built" or "failed"
    seconds: float
    size_bytes: int | None = None
    resolved: dict[str, str] = field(default_factory=dict)
    error: str | None = None


class Installer(Protocol):
    """The container half (the Docker backend): install wheels offline, find, list, remove."""

    def find_environment(self, key: str) -> EnvironmentRecord | None:
        """The record of a built environment, or None."""
        ...

    def install_environment(
        self,
        key: str,
        wheels: Path,
        requirements: Sequence[str],
        *,
        timeout: float,
        max_bytes: int,
        log_file: Path,
    ) -> EnvironmentRecord:
        """Install ``wheels`` offline into a derived image; raise EnvironmentBuildError."""
        ...

    def list_environments(self) -> list[EnvironmentRecord]:
        """Every built environment on this engine."""
        ...

    def remove_environment(self, key: str) -> bool:
        """Delete a built environment; False when it was not there."""
        ...
