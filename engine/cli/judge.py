"""``scorebox judge ...``: compare two outputs pairwise, list the built-in checks."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from engine.errors import ScoreboxError
from engine.settings import Settings


def _text(value: str) -> str:
    """``@path`` reads a file; anything else is the text itself."""
    if value.startswith("@"):
        return Path(value[1:]).read_text(encoding="utf-8")
    return value


@click.group()
def judge() -> None:
    """LLM judging from the command line."""


@judge.command("pairwise")
@click.option("--input", "input_text", required=True, help="The input (or @file).")
@click.option("--a", "output_a", required=True, help="Output A (or @file).")
@click.option("--b", "output_b", required=True, help="Output B (or @file).")
@click.option("--criteria", help="What 'better' means (default: overall quality).")
@click.option("--model", help="Judge model (default: SCOREBOX_LLM_MODEL).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def pairwise(
    input_text: str,
    output_a: str,
    output_b: str,
    criteria: str | None,
    model: str | None,
    as_json: bool,
) -> None:
    """Which output is better, A, B or SAME: judged in both orders."""
    from engine.judging.pairwise import compare  # noqa: PLC0415 (lazy: keeps scorebox --help fast)
    from engine.llm.openai_client import create_llm_client  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    try:
        llm = create_llm_client(Settings())
        result = compare(
            _text(input_text), _text(output_a), _text(output_b), llm, criteria, model=model
        )
    except (ScoreboxError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(json.dumps({**asdict(result), "status": result.status}, indent=2))
    else:
        click.echo(f"verdict:      {result.verdict or 'none (judge_error)'}")
        click.echo(f"A first:      {result.first_order or '-'}")
        click.echo(f"B first:      {result.second_order or '-'}  (mapped back to A/B)")
        click.echo(f"agreed:       {'yes' if result.agreed else 'no'}")
        for label, text in zip(("A first", "B first"), result.explanations, strict=True):
            if text:
                click.echo(f"{label} said: {text}")
    if result.error:
        raise click.ClickException(result.error)


@judge.command("builtins")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (with parameter schemas).")
def list_builtins(as_json: bool) -> None:
    """Every built-in check: kind, output type, description, parameters."""
    from engine.builtins import build_builtins, describe  # noqa: PLC0415 (lazy: keeps scorebox --help fast)

    items = describe(build_builtins())
    if as_json:
        click.echo(json.dumps(items, indent=2))
        return
    for item in items:
        params = ", ".join(item["params_schema"].get("properties", {})) or "-"
        click.echo(
            f"{item['name']:<28} {item['kind']:<8} {item['output_data_type']:<6} "
            f"{item['description']}"
        )
        click.echo(f"{'':<28} params: {params}")
