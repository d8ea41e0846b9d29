"""``scorebox run`` without a server: score rows here, .py checks in the sandbox,
built-ins in process."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from engine.export import record

BUILTIN_PREFIX = "builtin:"


def _ref_name(ref: str | Mapping[str, Any]) -> str:
    return ref if isinstance(ref, str) else str(ref["name"])


def local_llm(no_cache: bool) -> Any:
    """The configured LLM client for local judges (None when none is configured), with a
    judge cache under the data dir unless ``no_cache``."""
    from engine.settings import Settings  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    settings = Settings()
    if settings.llm_base_url is None and settings.llm_api_key is None:
        return None
    from engine.cli.judge_cache import DiskResponseCache  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.openai_client import create_llm_client  # noqa: PLC0415 (lazy: keeps openai out of scorebox --help)

    cache = None if no_cache else DiskResponseCache(settings.data_dir / "judge-cache")
    return create_llm_client(settings, cache=cache)


def run_local(
    checks: Sequence[str | dict[str, Any]],
    rows: list[dict[str, Any]],
    progress: bool,
    no_cache: bool = False,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Score locally: each check is a .py file (sandboxed) or a built-in name (with params).

    Returns (per-check summaries, per-row records).
    """
    from rich.progress import BarColumn, Progress, TextColumn  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    from engine.builtins import build_builtins  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.contract import Policy  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.errors import InvalidRequestError  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.gateway.service import gateway_session  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.runner import CodeCheck, SandboxRunner, as_rows  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.runs.summary import summarize  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.settings import Settings  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.validation import validate  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    settings = Settings()
    llm = local_llm(no_cache)
    builtins = build_builtins(llm)
    row_list = as_rows(rows)
    summaries: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    stack = contextlib.ExitStack()
    engine: Any = None
    gateway: Any = None
    try:
        with (
            stack,
            Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.completed}/{task.total}"),
                disable=not progress,
                transient=True,
            ) as bar,
        ):
            for ref in checks:
                name = _ref_name(ref)
                params: dict[str, Any] = (
                    {} if isinstance(ref, str) else dict(ref.get("params") or {})
                )
                task = bar.add_task(name, total=len(row_list))

                def tick(_index: int, _result: Any, task: Any = task) -> None:
                    bar.advance(task)

                path = Path(name)
                bare = name.removeprefix(BUILTIN_PREFIX)
                if not name.startswith(BUILTIN_PREFIX) and path.suffix == ".py" and path.exists():
                    source = path.read_text(encoding="utf-8")
                    report = validate(source, Policy.STANDARD)
                    if not report.valid:
                        problems = "; ".join(f"line {i.line}: {i.message}" for i in report.errors)
                        raise click.ClickException(f"{path} is not a valid check: {problems}")
                    code = CodeCheck(
                        source=source, name=path.stem, output_type=report.output_data_type
                    )
                    if engine is None:  # the sandbox only when a .py check needs it
                        engine = stack.enter_context(
                            SandboxRunner(settings.model_copy(update={"pool_size": 0}))
                        )
                    session = None
                    if llm is not None:  # the check's model calls go to the configured LLM
                        from engine.gateway import ModelGateway  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

                        if gateway is None:
                            gateway = ModelGateway(llm, settings)
                        session = gateway.session("local", f"local-{path.stem}")
                    with gateway_session(session):
                        results = engine.run_check(code, row_list, on_result=tick)
                    summaries.append(summarize(results, path.stem).model_dump())
                elif bare in builtins:
                    builtin = builtins[bare]
                    try:
                        builtin.validate_params(params)
                        results = builtin.score(row_list, params)
                    except InvalidRequestError as exc:
                        raise click.ClickException(f"{bare}: {exc}") from exc
                    bar.update(task, completed=len(row_list))
                    summaries.append(summarize(results, bare, kind=builtin.kind).model_dump())
                else:
                    raise click.ClickException(
                        f"{name!r} is neither a .py file nor a built-in: without --server, "
                        "name check files or built-ins (`scorebox judge list` and "
                        "docs/checks.md list them); with --server, name checks pushed there"
                    )
                records.extend(
                    record(i, r.model_dump(mode="json"), rows[i]) for i, r in enumerate(results)
                )
    finally:
        if llm is not None:
            llm.close()
    return summaries, records
