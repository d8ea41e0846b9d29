"""Where each kind of check runs: code in the sandbox, built-ins in process, model by a judge."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from engine.catalog import ResolvedCheck, judge_models
from engine.contract import OutputType, Policy
from engine.errors import InvalidRequestError
from engine.gateway.service import ModelGateway, gateway_session, quota_key
from engine.judging.model_check import run_model_check
from engine.llm.client import LLMClient
from engine.models import IndexedRow, Limits, ResultCallback
from engine.sandbox.backend import BackendHealth
from engine.sandbox.jobs import BlockCallback
from engine.sandbox.runner import CodeCheck, SandboxRunner
from engine.settings import Settings


class CheckExecutor(Protocol):
    """Scores rows with one resolved check, calling ``on_result(index, result)`` once per
    row with the index the row came with (its index in the run or request)."""

    def score(
        self,
        check: ResolvedCheck,
        rows: Sequence[IndexedRow],
        limits: Limits,
        labels: Mapping[str, str],
        on_result: ResultCallback,
    ) -> None: ...


class RunnerHolder:
    """Creates the :class:`~engine.sandbox.runner.SandboxRunner` on first use (Docker may
    start later)."""

    def __init__(
        self, settings: Settings, factory: Callable[[Settings], SandboxRunner] | None = None
    ):
        self.settings = settings
        self._factory = factory
        self._runner: SandboxRunner | None = None
        self._lock = threading.Lock()
        #: Called once with the runner when it is made (the API attaches its audit log to
        #: the runner's environment builds).
        self.on_start: list[Callable[[SandboxRunner], None]] = []

    def get(self) -> SandboxRunner:
        with self._lock:
            if self._runner is None:
                if self._factory is not None:
                    self._runner = self._factory(self.settings)
                else:
                    self._runner = SandboxRunner(self.settings)
                for hook in self.on_start:
                    hook(self._runner)
            return self._runner

    @property
    def started(self) -> bool:
        return self._runner is not None

    def health(self) -> BackendHealth:
        """The backend's health; starts the engine if needed (raises when Docker is down)."""
        return self.get().backend.health()

    def pool_sizes(self) -> Mapping[str, int]:
        if self._runner is None:
            return {}
        try:
            return dict(self._runner.backend.health().pool_sizes)
        except Exception:  # a scrape must not fail because Docker hiccuped
            return {}

    def close(self) -> None:
        with self._lock:
            if self._runner is not None:
                self._runner.close()
                self._runner = None


class CodeExecutor:
    """Code checks: the sandbox, through the SandboxRunner."""

    def __init__(self, runners: RunnerHolder, gateway: ModelGateway | None = None) -> None:
        self.runners = runners
        #: Answers the checks' model calls (None: no model configured; calls are refused).
        self.gateway = gateway

    def score(
        self,
        check: ResolvedCheck,
        rows: Sequence[IndexedRow],
        limits: Limits,
        labels: Mapping[str, str],
        on_result: ResultCallback,
        *,
        on_block: BlockCallback | None = None,
    ) -> None:
        """Score ``rows`` (one chunk) as one sandbox job under ``limits`` as they are.

        The run service cut the chunk and lowered the limits (``Settings.chunk_rows``,
        :func:`~engine.runs.scoring.effective_limits`): neither is done again here.
        ``on_block``: where the sandbox's result blocks go (else a RowResult a row).
        """
        version = check.check
        if version is None or version.source is None:
            raise InvalidRequestError(f"check {check.name!r} has no source")
        code = CodeCheck(
            source=version.source,
            name=version.name,
            version=version.version,
            policy=Policy(version.policy),
            output_type=OutputType(version.output_data_type) if version.output_data_type else None,
            entry=version.entry,
            config=version.config,
        )
        session = None
        if self.gateway is not None:
            # One run's spend is counted under its id; a /v1/score batch's (every check
            # and chunk of it) under the batch's.
            session = self.gateway.session(labels.get("scorebox.tenant", ""), quota_key(labels))
        with gateway_session(session):
            self.runners.get().run_job(code, rows, limits, labels, on_result, on_block)


class BuiltinExecutor:
    """Built-in checks: trusted callables, in process."""

    def score(
        self,
        check: ResolvedCheck,
        rows: Sequence[IndexedRow],
        limits: Limits,
        labels: Mapping[str, str],
        on_result: ResultCallback,
    ) -> None:
        if check.builtin is None:
            raise InvalidRequestError(f"{check.name!r} is not a built-in check")
        try:
            results = check.builtin.score([row for _, row in rows], check.params)
        except InvalidRequestError:
            raise
        except (ValueError, TypeError) as exc:
            raise InvalidRequestError(f"built-in {check.name!r}: {exc}") from exc
        if len(results) != len(rows):
            raise InvalidRequestError(
                f"built-in {check.name!r} returned the wrong number of results"
            )
        for (index, row), result in zip(rows, results, strict=True):
            on_result(index, result.model_copy(update={"check": check.name, "row_id": row.id}))


class ModelExecutor:
    """Model checks: the prompt template judged by the LLM (``engine.judging``)."""

    def __init__(self, llm: LLMClient | None, concurrency: int = 8) -> None:
        self.llm = llm
        self.concurrency = concurrency

    def score(
        self,
        check: ResolvedCheck,
        rows: Sequence[IndexedRow],
        limits: Limits,
        labels: Mapping[str, str],
        on_result: ResultCallback,
    ) -> None:
        version = check.check
        if version is None or not version.prompt_template:
            raise InvalidRequestError(f"check {check.name!r} has no prompt template")
        results = run_model_check(
            version.prompt_template,
            version.check_type or "score",
            [row for _, row in rows],
            self.llm,
            concurrency=self.concurrency,
            models=judge_models(check.params),
        )
        for (index, row), result in zip(rows, results, strict=True):
            on_result(
                index,
                result.model_copy(
                    update={"check": check.name, "version": check.version, "row_id": row.id}
                ),
            )


class Executors:
    """Picks the executor for a check's kind (``code``, ``builtin``, ``model``)."""

    def __init__(
        self,
        code: CheckExecutor,
        builtin: CheckExecutor | None = None,
        model: CheckExecutor | None = None,
    ) -> None:
        self._by_kind: dict[str, CheckExecutor] = {
            "code": code,
            "builtin": builtin or BuiltinExecutor(),
            "model": model or ModelExecutor(None),
        }

    def for_check(self, check: ResolvedCheck) -> CheckExecutor:
        if check.builtin is not None:
            return self._by_kind["builtin"]
        try:
            return self._by_kind[check.kind]
        except KeyError as exc:
            raise InvalidRequestError(f"unknown check kind {check.kind!r}") from exc
