"""``scorebox doctor``: what is wrong with this installation and how to fix it."""

from __future__ import annotations

import json
from dataclasses import dataclass

import click

from engine.errors import ScoreboxError
from engine.settings import Settings


@dataclass(frozen=True)
class Finding:
    name: str
    ok: bool
    detail: str
    required: bool = True


def check_sandbox(settings: Settings) -> list[Finding]:
    try:
        from engine.sandbox.docker_backend import DockerBackend

        backend = DockerBackend(settings.model_copy(update={"pool_size": 0}))
        try:
            health = backend.health()
        finally:
            backend.close()
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
    return [
        Finding("docker", health.engine_ok, engine_detail),
        Finding("image", health.image_ok, image_detail),
    ]


def check_database(settings: Settings) -> Finding:
    from engine.storage.database import create_db_engine, current_revision, head_revision, ping

    url = settings.effective_database_url
    try:
        engine = create_db_engine(url)
        ping(engine)
        current, head = current_revision(engine), head_revision()
    except ScoreboxError as exc:
        return Finding("database", False, str(exc))
    except Exception as exc:
        return Finding("database", False, f"{url}: {exc} (check SCOREBOX_DATABASE_URL)")
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
    import httpx

    base = (settings.llm_base_url or "https://api.openai.com/v1").rstrip("/")
    headers = {}
    if settings.llm_api_key is not None:
        headers["Authorization"] = f"Bearer {settings.llm_api_key.get_secret_value()}"
    try:
        response = httpx.get(f"{base}/models", headers=headers, timeout=10)
    except httpx.HTTPError as exc:
        return Finding(
            "llm", False, f"{base} not reachable: {exc} (check SCOREBOX_LLM_BASE_URL)", False
        )
    if response.status_code in (401, 403):
        return Finding("llm", False, f"{base} refused the key: check SCOREBOX_LLM_API_KEY", False)
    if response.status_code >= 400:
        return Finding("llm", False, f"{base}/models answered HTTP {response.status_code}", False)
    return Finding("llm", True, f"{base} answers (model {settings.llm_model})", False)


@click.command()
@click.option("--json", "as_json", is_flag=True)
def doctor(as_json: bool) -> None:
    """Check the Docker engine, the sandbox image, the database and the LLM endpoint."""
    settings = Settings()
    findings = [*check_sandbox(settings), check_database(settings), check_llm(settings)]
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
