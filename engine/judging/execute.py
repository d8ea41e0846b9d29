"""Send judge prompts, parse the replies, aggregate ensembles: one :class:`RowResult` per row.

Every failure is a row status, never an exception: no client or an LLM error →
``judge_error`` with the client's message; an unparseable reply →
``judge_error`` naming the form expected; a prompt that cannot be built (the
row lacks an input) → ``skipped``. Calls run on a small thread pool (the
client's own semaphore bounds what is in flight); the caller's context
(e.g. the usage meter of :mod:`engine.llm.usage`) follows every call.

Ensembles: with several judge models each row is judged by each model. A
score is the mean of the judges that answered (an ``int`` when it is whole,
else a ``float``); pass/fail is the majority (a tie fails). The explanation
opens with the aggregate and the agreement: the share of judges that gave the
most common answer. A judge that failed is listed; the row is
``judge_error`` only when every judge failed.
"""

from __future__ import annotations

import contextvars
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from engine.contract import Status
from engine.errors import LLMError
from engine.judging.parse import (
    ParsedScore,
    UnparseableReplyError,
    parse_pass_fail,
    parse_score,
)
from engine.llm.client import LLMClient, Message
from engine.models import Row, RowResult

NO_LLM_MESSAGE = "no LLM endpoint configured: set SCOREBOX_LLM_BASE_URL"

CheckType = Literal["score", "pass_fail"]


class PromptSkip(Exception):
    """Raised by a prompt builder when the row lacks an input the judge needs."""


@dataclass(frozen=True)
class JudgeConfig:
    """How to ask: models (several = an ensemble), sampling, scale, reply format."""

    models: tuple[str | None, ...] = (None,)  # None: the client's configured model
    check_type: CheckType = "score"
    low: int | None = 1
    high: int | None = 5
    temperature: float | None = 0.0
    max_tokens: int | None = 600
    json_mode: bool = False  # ask for response_format={"type": "json_object"}
    concurrency: int = 8
    #: A score parser of the judge's own (a published check's); default: parse_score(low, high)
    parse: Callable[[str], ParsedScore] | None = None


@dataclass(frozen=True)
class _Vote:
    model: str
    score: bool | int | float | None = None
    explanation: str | None = None
    error: str | None = None


PromptBuilder = Callable[[int, Row], Sequence[Message]]
"""Builds the messages for row ``index``; raises :class:`PromptSkip` when it cannot."""


def _ask(llm: LLMClient, messages: Sequence[Message], model: str | None, cfg: JudgeConfig) -> _Vote:
    label = model or "default model"
    try:
        completion = llm.complete(
            messages,
            model=model,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            response_format={"type": "json_object"} if cfg.json_mode else None,
        )
    except LLMError as exc:
        return _Vote(label, error=str(exc))
    label = model or completion.model
    try:
        if cfg.check_type == "pass_fail":
            verdict = parse_pass_fail(completion.text)
            return _Vote(label, verdict.passed, verdict.explanation)
        if cfg.parse is not None:
            parsed = cfg.parse(completion.text)
        else:
            parsed = parse_score(completion.text, low=cfg.low, high=cfg.high)
        return _Vote(label, parsed.score, parsed.explanation)
    except UnparseableReplyError as exc:
        excerpt = completion.text.strip().replace("\n", " ")[:200]
        return _Vote(label, error=f"unparseable judge reply ({exc}); the reply began: {excerpt!r}")


def _aggregate(row: Row, votes: Sequence[_Vote], cfg: JudgeConfig, ms: float) -> RowResult:
    good = [v for v in votes if v.error is None and v.score is not None]
    failed = [v for v in votes if v.error is not None]
    if not good:
        errors = "; ".join(
            f"{v.model}: {v.error}" if len(votes) > 1 else str(v.error) for v in failed
        )
        return RowResult(row_id=row.id, status=Status.JUDGE_ERROR, error=errors, duration_ms=ms)
    # the judges that answered, as a code check's gateway calls name theirs (sorted, joined)
    served = ", ".join(sorted({v.model for v in good}))
    if len(votes) == 1:
        vote = good[0]
        return RowResult(
            row_id=row.id,
            status=Status.OK,
            score=vote.score,
            explanation=vote.explanation,
            duration_ms=ms,
            model=served,
        )
    answers = [v.score for v in good if v.score is not None]
    common, count = Counter(answers).most_common(1)[0]
    agreement = count / len(good)
    score: Any
    if cfg.check_type == "pass_fail":
        passes = sum(1 for a in answers if a)
        score = passes * 2 > len(answers)
        summary = f"{passes} of {len(answers)} judges passed it"
    else:
        mean = statistics.fmean(answers)
        score = int(mean) if mean.is_integer() else round(mean, 4)
        summary = f"mean {score}"
    lines = [
        f"ensemble of {len(votes)} judges: {summary}; agreement {agreement:.2f} "
        f"({count} of {len(good)} gave {common})"
    ]
    lines += [f"[{v.model}] {v.score}: {v.explanation or ''}".rstrip() for v in good]
    lines += [f"[{v.model}] failed: {v.error}" for v in failed]
    return RowResult(
        row_id=row.id,
        status=Status.OK,
        score=score,
        explanation="\n".join(lines),
        duration_ms=ms,
        model=served,
    )


def judge_rows(
    rows: Sequence[Row],
    build_prompt: PromptBuilder,
    llm: LLMClient | None,
    cfg: JudgeConfig,
) -> list[RowResult]:
    """Judge every row with every model of ``cfg``; one result per row, in order."""
    prompts: list[Sequence[Message] | str] = []
    for index, row in enumerate(rows):
        try:
            prompts.append(build_prompt(index, row))
        except PromptSkip as skip:
            prompts.append(str(skip))
    if llm is None:
        return [
            RowResult(row_id=row.id, status=Status.SKIPPED, error=prompt)
            if isinstance(prompt, str)
            else RowResult(row_id=row.id, status=Status.JUDGE_ERROR, error=NO_LLM_MESSAGE)
            for row, prompt in zip(rows, prompts, strict=True)
        ]
    jobs = [
        (index, model)
        for index, prompt in enumerate(prompts)
        if not isinstance(prompt, str)
        for model in cfg.models
    ]
    started = time.perf_counter()

    def run(job: tuple[int, str | None]) -> _Vote:
        prompt = prompts[job[0]]
        assert not isinstance(prompt, str)
        return _ask(llm, prompt, job[1], cfg)

    workers = max(1, min(cfg.concurrency, len(jobs)))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge") as pool:
        futures = [pool.submit(contextvars.copy_context().run, run, job) for job in jobs]
        votes_by_row: dict[int, list[_Vote]] = {}
        for job, future in zip(jobs, futures, strict=True):
            votes_by_row.setdefault(job[0], []).append(future.result())
    elapsed_ms = (time.perf_counter() - started) * 1000
    per_row_ms = elapsed_ms / max(1, len(votes_by_row))
    results: list[RowResult] = []
    for index, row in enumerate(rows):
        prompt = prompts[index]
        if isinstance(prompt, str):
            results.append(RowResult(row_id=row.id, status=Status.SKIPPED, error=prompt))
        else:
            results.append(_aggregate(row, votes_by_row[index], cfg, per_row_ms))
    return results
