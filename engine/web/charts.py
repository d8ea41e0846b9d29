"""Server-side SVG charts: no JavaScript, nothing fetched, readable by screen readers."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

WIDTH = 360
HEIGHT = 140
STATUS_COLOURS = {"ok": "#2f855a", "skipped": "#a0aec0"}
FAIL_COLOUR = "#c53030"


def _fmt(value: float) -> str:
    return f"{value:.3g}"


def bar_chart(
    title: str, bars: Sequence[tuple[str, int, str]], *, width: int = WIDTH, height: int = HEIGHT
) -> str:
    """An SVG bar chart of ``(label, count, colour)`` with ``role=img`` named ``title``."""
    top = max((n for _, n, _ in bars), default=0) or 1
    slot = width / max(len(bars), 1)
    inner = height - 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(title)}" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" class="chart">',
        f"<title>{escape(title)}</title>",
    ]
    for i, (label, n, colour) in enumerate(bars):
        h = inner * n / top
        x = i * slot + 2
        parts.append(
            f'<rect x="{x:.1f}" y="{inner - h + 12:.1f}" width="{max(slot - 4, 1):.1f}" '
            f'height="{h:.1f}" fill="{colour}"><title>{escape(label)}: {n}</title></rect>'
        )
        if len(bars) <= 12:
            parts.append(
                f'<text x="{x + slot / 2 - 2:.1f}" y="{height - 4}" font-size="10" '
                f'text-anchor="middle">{escape(label)}</text>'
            )
    if len(bars) > 12 and bars:
        parts.append(f'<text x="2" y="{height - 4}" font-size="10">{escape(bars[0][0])}</text>')
        parts.append(
            f'<text x="{width - 2}" y="{height - 4}" font-size="10" text-anchor="end">'
            f"{escape(bars[-1][0])}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def histogram_svg(check: str, bins: Sequence[tuple[float, int]]) -> str:
    bars = [(_fmt(edge), n, "#3182ce") for edge, n in bins]
    return bar_chart(f"score distribution of {check}", bars)


def pass_fail_svg(check: str, passed: int, failed: int) -> str:
    return bar_chart(
        f"pass and fail of {check}",
        [("pass", passed, STATUS_COLOURS["ok"]), ("fail", failed, FAIL_COLOUR)],
    )


def status_svg(check: str, counts: dict[str, int]) -> str:
    bars = [
        (status, n, STATUS_COLOURS.get(status, FAIL_COLOUR))
        for status, n in sorted(counts.items(), key=lambda kv: (kv[0] != "ok", kv[0]))
    ]
    return bar_chart(f"statuses of {check}", bars, width=240)
