"""Exceptions raised by scorebox for its own failures.

User code failing is never an exception: it becomes a typed status on a row
result (see :class:`engine.contract.Status`). These are for misuse of the API
and for infrastructure::

    ScoreboxError                  root: catch this to catch everything below
    ├── ConfigurationError         settings are missing or inconsistent
    │   ├── RuntimeUnavailableError SCOREBOX_RUNTIME names a runtime the Docker engine lacks
    │   └── SettingValueError      a SCOREBOX_* variable has a value of the wrong form
    │                              (engine.setting_values: names the variable and an example)
    ├── NotFoundError              a check, run, tenant or key does not exist (or is not yours)
    ├── ConflictError              the request conflicts with stored state
    ├── InvalidRequestError        the request is malformed (bad rows, bad reference, bad limits)
    │   ├── CheckValidationError   a check failed validation; carries the report
    │   └── OutputPathError        an output file cannot be written; said before scoring
    │                              (engine.suites.outputs)
    ├── QuotaExceededError         a tenant quota was passed; carries retry_after_seconds
    ├── AuthError                  no, or an unknown, API key
    ├── ForbiddenError             a valid key that may not do this (admin endpoints)
    ├── StorageError               the database cannot be reached or migrated
    ├── SandboxError               the sandbox infrastructure failed
    │   ├── DockerUnavailableError the Docker engine cannot be reached
    │   ├── ImageNotFoundError     the sandbox image is not built
    │   └── EnvironmentBuildError  a check's declared environment (PEP 723) cannot be built
    │       └── PackageIndexError  the package index was unreachable or too slow (retryable)
    └── LLMError                   the LLM endpoint failed (after retries)
        ├── LLMUnavailableError    connection refused, timeout, 5xx after retries
        ├── LLMRateLimitError      429 after retries
        └── LLMResponseError       the reply is empty, refused, or cannot be used
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.validation import ValidationReport


class ScoreboxError(Exception):
    """Root of every exception scorebox raises on purpose."""


class ConfigurationError(ScoreboxError):
    """Raised when settings are missing or inconsistent."""


class RuntimeUnavailableError(ConfigurationError):
    """Raised when SCOREBOX_RUNTIME names an OCI runtime the Docker engine does not offer."""


class NotFoundError(ScoreboxError):
    """Raised when a check, run, tenant or key does not exist for the caller."""


class ConflictError(ScoreboxError):
    """Raised when a request conflicts with stored state."""


class InvalidRequestError(ScoreboxError):
    """Raised when a request is malformed: bad rows, reference, limits or parameters."""


class CheckValidationError(InvalidRequestError):
    """Raised when a check fails validation; ``report`` says what to fix."""

    def __init__(self, message: str, report: ValidationReport) -> None:
        super().__init__(message)
        self.report = report


class QuotaExceededError(ScoreboxError):
    """Raised when a tenant passes one of its quotas."""

    def __init__(self, message: str, retry_after_seconds: int = 1) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds


class AuthError(ScoreboxError):
    """Raised when a request carries no API key, or one that is unknown or revoked."""


class ForbiddenError(ScoreboxError):
    """Raised when a valid key asks for something it may not do (admin endpoints)."""


class StorageError(ScoreboxError):
    """Raised when the database cannot be reached, or its schema cannot be migrated."""

    #: what an HTTP client is told to wait before trying again (``Retry-After``)
    retry_after_seconds = 5


class SandboxError(ScoreboxError):
    """Raised when the sandbox infrastructure fails (not when user code fails)."""


class DockerUnavailableError(SandboxError):
    """Raised when the Docker engine cannot be reached."""


class ImageNotFoundError(SandboxError):
    """Raised when the sandbox image has not been built."""


class EnvironmentBuildError(SandboxError):
    """Raised when a check's declared environment cannot be built or used; names the build."""


class PackageIndexError(EnvironmentBuildError):
    """Raised when an environment's download failed because the package index could not be
    reached or answered too slowly: the build is retryable, unlike a missing wheel."""


class LLMError(ScoreboxError):
    """Raised when the LLM endpoint fails after retries."""


class LLMUnavailableError(LLMError):
    """Raised on connection errors, timeouts and 5xx replies after retries."""


class LLMRateLimitError(LLMError):
    """Raised on 429 replies after retries."""


class LLMResponseError(LLMError):
    """Raised when the reply is empty, a refusal, or otherwise unusable."""


def error_named(name: str) -> type[ScoreboxError] | None:
    """The scorebox error class called ``name`` (a worker's error crosses the broker by
    name), or None when there is none."""
    found: list[type[ScoreboxError]] = [ScoreboxError]
    for cls in found:
        if cls.__name__ == name:
            return cls
        found.extend(cls.__subclasses__())
    return None
