"""Cells and lookups shared by the report, its targets and its chart."""

from __future__ import annotations

from typing import Any

from bench.measure import Figure
from bench.suite import (
    EPICBOX_BATCH,
    IN_PROCESS,
    LAT_ECHO,
    LAT_EPICBOX,
    LAT_FRESH,
    LAT_GATEWAY,
    LAT_GATEWAY_DIRECT,
    LAT_HEALTHZ,
    LAT_IN_PROCESS,
    LAT_LLM_SANDBOX,
    LAT_RUN_CHECK,
    LAT_SCORE,
    LAT_SCORE_BUILTIN,
    LAT_SCORE_CONCURRENT,
    LLM_SANDBOX_BATCH,
    REUSE_CHECK,
    REUSE_NEVER,
    SCORE_TABLE,
    THROUGHPUT,
    Results,
)

SYSTEMS = (IN_PROCESS, REUSE_CHECK, SCORE_TABLE, REUSE_NEVER, EPICBOX_BATCH, LLM_SANDBOX_BATCH)
PEER_BATCHES = (EPICBOX_BATCH, LLM_SANDBOX_BATCH)
#: the lines whose host CPU per row is reported
HOST_CPU_SYSTEMS = (REUSE_CHECK, SCORE_TABLE)
LATENCY_ORDER = (
    LAT_IN_PROCESS,
    LAT_RUN_CHECK,
    LAT_ECHO,
    LAT_HEALTHZ,
    LAT_SCORE_BUILTIN,
    LAT_SCORE,
    LAT_SCORE_CONCURRENT,
    LAT_FRESH,
    LAT_EPICBOX,
    LAT_LLM_SANDBOX,
    LAT_GATEWAY,
    LAT_GATEWAY_DIRECT,
)
COMMAND = "python -m bench"
TIMES = "\u00d7"  # the multiplication sign
DASH = "\u2013"  # an en dash, for ranges and empty cells


def ms(value: float) -> str:
    if value < 0.1:
        return f"{value * 1000:.1f} µs"
    if value < 10:
        return f"{value:.2f} ms"
    return f"{value:,.0f} ms" if value >= 100 else f"{value:.1f} ms"


def rate(figure: Figure) -> float:
    """Rows per second at the median of a throughput figure."""
    return float(figure.extra["rows"]) / figure.median


def rate_cell(figure: Figure | None) -> str:
    if figure is None:
        return DASH
    rows = float(figure.extra["rows"])
    cell = f"{rate(figure):,.0f}"
    if len(figure.samples) > 1:
        cell += f" ({rows / figure.high:,.0f}{DASH}{rows / figure.low:,.0f})"
    return cell


def us_per_row(figure: Figure) -> float:
    return figure.median / float(figure.extra["rows"]) * 1e6


def figure_of(results: Results, section: str, name: str, **extra: Any) -> Figure | None:
    """The figure of ``section``/``name`` (with these extras) in ``results``, if measured."""
    return results.find(section, name, **extra)


def scorebox_line(results: Results) -> str:
    """The throughput line targets are judged on: REUSE=check, or the only one there is."""
    if any(f.section == THROUGHPUT and f.name == REUSE_CHECK for f in results.figures):
        return REUSE_CHECK
    return REUSE_NEVER


def batch_line(results: Results) -> str:
    """scorebox's line for many rows: score_table where measured, else :func:`scorebox_line`."""
    if any(f.section == THROUGHPUT and f.name == SCORE_TABLE for f in results.figures):
        return SCORE_TABLE
    return scorebox_line(results)
