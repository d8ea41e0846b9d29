"""``scorebox doctor``: what is wrong with this installation and how to fix it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import click

from engine.errors import RuntimeUnavailableError, ScoreboxError
from engine.redact import mask_credentials
from engine.settings import Settings


@dataclass(frozen=True)
class Finding:
    name: str
    ok: bool
    detail: str
    required: bool = True


def check_sandbox(settings: Settings) -> list[Finding]:
    try:
        from engine.sandbox.docker.backend import DockerBackend  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

        backend = DockerBackend(settings.model_copy(update={"pool_size": 0}))
        try:
            health = backend.health()
            environments = _environments_detail(backend, settings)
        finally:
            backend.close()
    except RuntimeUnavailableError as exc:
        return [
            Finding("docker", True, "reachable"),
            Finding("runtime", False, str(exc)),
            Finding("image", False, "unknown until SCOREBOX_RUNTIME is fixed"),
        ]
    except ScoreboxError as exc:
        return [
            Finding("docker", False, str(exc)),
            Finding("image", False, "unknown until the Docker engine answers"),
        ]
    image_detail = (
        f"{settings.image} present"
        if health.image_ok
        else f"{settings.image} missing: build it with `scorebox image build` ({health.detail})"
    )
    engine_detail = "reachable" if health.engine_ok else health.detail
    runtime_detail = (
        f"sandboxes use {health.runtime or 'the default'}"
        f"{' (gVisor)' if health.runtime == 'runsc' else ''}; the engine offers "
        f"{', '.join(health.runtimes) or 'unknown'}"
    )
    if health.runtime != "runsc" and "runsc" in health.runtimes:
        runtime_detail += " (SCOREBOX_RUNTIME=runsc puts every check under gVisor)"
    return [
        Finding("docker", health.engine_ok, engine_detail),
        Finding("runtime", health.engine_ok, runtime_detail, required=False),
        Finding("image", health.image_ok, image_detail),
        Finding("envs", True, environments, required=False),
    ]


def _environments_detail(backend: Any, settings: Settings) -> str:
    """The declared-environment cache: how many, how big, how many of older images."""
    try:
        records = backend.environments.records()
    except ScoreboxError as exc:
        return f"cache unreadable: {exc}"
    stale = sum(1 for r in records if r.base_image != settings.image)
    size = sum(r.size_bytes for r in records) / 1e6
    mode = "offline: prebuilt only" if settings.packages_offline else "built on first use"
    detail = f"{len(records)} declared environment(s), {size:.0f} MB ({mode})"
    if stale:
        detail += f"; {stale} of older sandbox images (`scorebox env prune` removes them)"
    return detail


def check_packages(settings: Settings) -> Finding:
    """A warning when a private or extra package index is open to every tenant."""
    from engine.environments.wheels import private_index_warning  # noqa: PLC0415 (lazy)

    warning = private_index_warning(settings)
    if warning is None:
        rules = "an allow list" if settings.packages_allow else "PyPI only"
        return Finding("packages", True, f"declared packages: {rules}", required=False)
    return Finding("packages", False, warning, required=False)


def check_database(settings: Settings) -> Finding:
    from engine.storage.database import create_db_engine, current_revision, head_revision, ping  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    url = settings.effective_database_url
    try:
        engine = create_db_engine(url)
        ping(engine)
        current, head = current_revision(engine), head_revision()
    except ScoreboxError as exc:
        return Finding("database", False, str(exc))
    except Exception as exc:
        shown = mask_credentials(f"{url}: {exc}")
        return Finding("database", False, f"{shown} (check SCOREBOX_DATABASE_URL)")
    if current != head:
        return Finding(
            "database",
            True,
            f"reachable, schema at {current or 'empty'} (newest {head}): run `scorebox db "
            "upgrade` or start the service, which upgrades it",
        )
    return Finding("database", True, f"reachable, schema at {current}")


def check_llm(settings: Settings) -> Finding:
    if not settings.llm_base_url and settings.llm_api_key is None:
        return Finding(
            "llm",
            False,
            "not configured (needed only for LLM judges and the generator): set "
            "SCOREBOX_LLM_BASE_URL and SCOREBOX_LLM_API_KEY (or OPENAI_API_KEY)",
            required=False,
        )
    import httpx  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    base = (settings.llm_base_url or "https://api.openai.com/v1").rstrip("/")
    # doctor's output is pasted into tickets and CI logs: the URL's credentials stay out
    shown = mask_credentials(base)
    headers = {}
    if settings.llm_api_key is not None:
        headers["Authorization"] = f"Bearer {settings.llm_api_key.get_secret_value()}"
    try:
        response = httpx.get(f"{base}/models", headers=headers, timeout=10)
    except httpx.HTTPError as exc:
        return Finding(
            "llm",
            False,
            mask_credentials(f"{shown} not reachable: {exc} (check SCOREBOX_LLM_BASE_URL)"),
            False,
        )
    if response.status_code in (401, 403):
        return Finding("llm", False, f"{shown} refused the key: check SCOREBOX_LLM_API_KEY", False)
    if response.status_code >= 400:
        return Finding("llm", False, f"{shown}/models answered HTTP {response.status_code}", False)
    return Finding("llm", True, f"{shown} answers (model {settings.llm_model})", False)


def check_distributed_mode(settings: Settings) -> list[Finding]:
    """Distributed mode: the settings, the broker, and the workers that answer ``ping``."""
    from engine.distributed.preflight import check_broker, check_config, masked_url  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    url = settings.broker_url or ""
    try:
        check_config(settings)
        check_broker(url)
    except ScoreboxError as exc:
        return [Finding("broker", False, str(exc))]
    findings = [Finding("broker", True, f"{masked_url(url)} answers (distributed mode)")]
    try:
        from engine.distributed.celery_app import create_celery, workers_seen  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

        seen = workers_seen(create_celery(settings))
    except Exception as exc:
        return [*findings, Finding("workers", False, f"could not ask the workers: {exc}")]
    if not seen:
        return [
            *findings,
            Finding(
                "workers",
                False,
                "no `scorebox worker` answered: start one on a host with Docker "
                "(docs/deploy.md); runs wait in the queue until then",
            ),
        ]
    parts = []
    runtimes: dict[str, list[str]] = {}
    for name, info in sorted(seen.items()):
        extra = info.get("scorebox") or {}
        runtime = str(extra.get("runtime") or "unknown")
        runtimes.setdefault(runtime, []).append(name)
        parts.append(
            f"{name} ({runtime} runtime, {info['celery_pool']} pool, {info['concurrency']} "
            f"slots, warm pools {json.dumps(extra.get('warm_pools', {}))}, "
            f"{extra.get('chunks_in_hand', 0)} chunks in hand)"
        )
    findings.append(Finding("workers", True, f"{len(seen)} seen: " + "; ".join(parts)))
    return [*findings, worker_runtimes_finding(runtimes)]


def worker_runtimes_finding(runtimes: dict[str, list[str]]) -> Finding:
    """A warning when workers' sandboxes use different runtimes (a check may run under either)."""
    if len(runtimes) <= 1:
        return Finding(
            "worker runtimes", True, f"every worker uses {next(iter(runtimes), 'unknown')}", False
        )
    mix = "; ".join(f"{rt} on {', '.join(names)}" for rt, names in sorted(runtimes.items()))
    return Finding(
        "worker runtimes",
        False,
        f"workers use different sandbox runtimes ({mix}): a tenant's checks run under "
        "whichever worker takes them. For untrusted code set SCOREBOX_RUNTIME=runsc on every "
        "worker, or pin such tenants to the runsc workers (`scorebox tenant set-quota NAME "
        "runsc_only=1`)",
        False,
    )


@click.command()
@click.option("--json", "as_json", is_flag=True)
def doctor(as_json: bool) -> None:
    """Check the Docker engine, the sandbox image, the database and the LLM endpoint.

    In distributed mode (SCOREBOX_BROKER_URL set) also the broker and the workers it sees.
    """
    settings = Settings()
    findings = [
        *check_sandbox(settings),
        check_packages(settings),
        check_database(settings),
        check_llm(settings),
    ]
    if settings.broker_url:
        # an API node needs no Docker engine; the workers' own doctor runs check theirs
        findings = [
            Finding(f.name, f.ok, f.detail, required=False)
            if f.name in ("docker", "runtime", "image")
            else f
            for f in findings
        ]
        findings += check_distributed_mode(settings)
    failed = [f for f in findings if f.required and not f.ok]
    if as_json:
        click.echo(
            json.dumps(
                {
                    "ok": not failed,
                    "checks": [f.__dict__ for f in findings],
                    "settings": settings.masked(),
                },
                indent=2,
                default=str,
            )
        )
    else:
        for f in findings:
            mark = "ok  " if f.ok else ("FAIL" if f.required else "warn")
            click.echo(f"[{mark}] {f.name:9} {f.detail}")
        click.echo("\neffective settings (secrets masked):")
        for key, value in settings.masked().items():
            click.echo(f"  {key} = {json.dumps(value, default=str)}")
    if failed:
        raise SystemExit(1)
