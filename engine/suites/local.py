"""``scorebox run`` without a server: score rows here, .py checks in the sandbox,
built-ins in process."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# re-exported (engine.cli.run reads it here)
from engine.names import BUILTIN_PREFIX as BUILTIN_PREFIX  # noqa: PLC0414
from engine.names import split_entry
from engine.runs.export import record


def _ref_name(ref: str | Mapping[str, Any]) -> str:
    return ref if isinstance(ref, str) else str(ref["name"])


def _unknown(name: str, builtins: Mapping[str, Any]) -> str | None:
    """Why a local run cannot score ``name`` (None when it can): a .py file that is not
    there, or a name that is no built-in (with the closest ones)."""
    bare = name.removeprefix(BUILTIN_PREFIX)
    name = split_entry(name)[0]
    if not name.startswith(BUILTIN_PREFIX) and Path(name).suffix == ".py":
        if Path(name).is_file():
            return None
        if Path(name).is_dir():
            return f"{name} is a directory: name the check's .py file"
        return (
            f"file not found: {name} (a check file's path is relative to the current "
            "directory, or to the suite file)"
        )
    if bare in builtins:
        return None
    close = difflib.get_close_matches(bare, list(builtins), n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    return (
        f"{name!r} is neither a .py file nor a built-in{hint}: without --server, "
        "name check files or built-ins (`scorebox judge list` and "
        "docs/checks.md list them); with --server, name checks pushed there"
    )


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

    from engine.contract import Policy  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.environments.spec import PackageRules  # noqa: PLC0415 (lazy)
    from engine.errors import InvalidRequestError  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.gateway.service import gateway_session  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.rows import as_rows  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.runs.summary import summarize  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.runs.wiring import build_scoring  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.sandbox.runner import CodeCheck  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.settings import Settings  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.validation import validate  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    settings = Settings()
    # no warm pool: a local run starts the containers its .py checks need, and only then
    scoring = build_scoring(
        settings.model_copy(update={"pool_size": 0}),
        cache_dir=None if no_cache else settings.data_dir / "judge-cache",
    )
    builtins = scoring.builtins
    row_list = as_rows(rows)
    summaries: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    try:
        for ref in checks:  # every reference before the first row: a typo costs no run
            problem = _unknown(_ref_name(ref), builtins)
            if problem is not None:
                raise InvalidRequestError(problem)
        with (
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

                file, entry = split_entry(name)
                path = Path(file)
                bare = name.removeprefix(BUILTIN_PREFIX)
                config = None if isinstance(ref, str) else ref.get("config")
                if not name.startswith(BUILTIN_PREFIX) and path.suffix == ".py" and path.exists():
                    source = path.read_text(encoding="utf-8")
                    rules = PackageRules.of(settings.packages_allow, settings.packages_deny)
                    report = validate(source, Policy.STANDARD, packages=rules, entry=entry)
                    if not report.valid:
                        problems = "; ".join(f"line {i.line}: {i.message}" for i in report.errors)
                        raise InvalidRequestError(f"{path} is not a valid check: {problems}")
                    label = path.stem if entry is None else f"{path.stem}:{entry}"
                    code = CodeCheck(
                        source=source,
                        name=label,
                        output_type=report.output_data_type,
                        entry=entry,
                        config=config,
                    )
                    runner = scoring.runners.get()  # the sandbox starts for the first .py check
                    session = None  # the check's model calls go to the configured LLM, if any
                    if scoring.gateway is not None:
                        session = scoring.gateway.session("local", f"local-{label}")
                    with gateway_session(session):
                        results = runner.run_check(code, row_list, on_result=tick)
                    summaries.append(summarize(results, label).model_dump())
                elif bare in builtins:
                    builtin = builtins[bare]
                    try:
                        builtin.validate_params(params)
                        results = builtin.score(row_list, params)
                    except InvalidRequestError as exc:
                        raise InvalidRequestError(f"{bare}: {exc}") from exc
                    bar.update(task, completed=len(row_list))
                    summaries.append(summarize(results, bare, kind=builtin.kind).model_dump())
                else:  # _unknown let it through: cannot happen
                    raise InvalidRequestError(_unknown(name, builtins) or name)
                records.extend(
                    record(i, r.model_dump(mode="json"), rows[i]) for i, r in enumerate(results)
                )
    finally:
        scoring.close()
    return summaries, records
