"""``--config``: a code check's JSON configuration, given inline or as ``@file``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click


def read_config(raw: str, hint: str = "--config") -> dict[str, Any]:
    """A JSON object, inline or from ``@file``; a usage error names what is wrong."""
    text = raw
    if raw.startswith("@"):
        try:
            text = Path(raw[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise click.BadParameter(
                f"cannot read {raw[1:]}: {exc.strerror or exc}", param_hint=hint
            ) from exc
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"{raw!r} is not JSON: {exc.msg}", param_hint=hint) from exc
    if not isinstance(value, dict):
        raise click.BadParameter(
            f"{raw!r}: a configuration is a JSON object, e.g. '{{\"threshold\": 0.8}}'",
            param_hint=hint,
        )
    return value


def apply_configs(
    refs: Sequence[str | dict[str, Any]], pairs: Sequence[str]
) -> list[str | dict[str, Any]]:
    """``--config CHECK=JSON|@file`` merged into the run's check references."""
    configs: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        check, sep, raw = pair.partition("=")
        if not sep or not check:
            raise click.BadParameter(
                f"{pair!r}: expected CHECK=JSON or CHECK=@file, e.g. "
                "graders.py:injection_blocked='{\"threshold\": 0.8}'",
                param_hint="--config",
            )
        configs[check] = read_config(raw)
    out: list[str | dict[str, Any]] = []
    used: set[str] = set()
    for ref in refs:
        name = ref if isinstance(ref, str) else str(ref["name"])
        config = configs.get(name)
        if config is None:
            out.append(ref)
            continue
        used.add(name)
        merged: dict[str, Any] = {"name": ref} if isinstance(ref, str) else dict(ref)
        merged["config"] = {**dict(merged.get("config") or {}), **config}
        out.append(merged)
    unknown = sorted(set(configs) - used)
    if unknown:
        raise click.BadParameter(
            f"--config names check(s) not in the run: {', '.join(unknown)}",
            param_hint="--config",
        )
    return out
