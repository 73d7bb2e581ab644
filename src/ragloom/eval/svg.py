"""Grouped bar charts as inline SVG, so an HTML report needs no plotting library or network."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

#: Colour-blind-safe palette (Okabe & Ito).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")

_WIDTH, _HEIGHT = 760, 300
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 16, 36, 56


def grouped_bars(
    title: str,
    groups: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
    *,
    unit: str = "",
    digits: int = 3,
) -> str:
    """One cluster of bars per group, one bar (and colour) per series, value printed on top."""
    top = _nice_ceiling(max((v for _, values in series for v in values), default=0.0))
    plot_w, plot_h = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM
    slot = plot_w / max(len(groups), 1)
    bar = slot * 0.8 / max(len(series), 1)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img" '
        f'aria-label="{escape(title)}" font-family="system-ui, sans-serif" font-size="11">',
        f'<text x="{_WIDTH / 2}" y="18" text-anchor="middle" font-size="14" font-weight="600">{escape(title)}</text>',
    ]
    for step in range(5):  # horizontal grid with labels
        value = top * step / 4
        y = _TOP + plot_h - plot_h * step / 4
        parts.append(f'<line x1="{_LEFT}" x2="{_WIDTH - _RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{value:.{digits}g}{escape(unit)}</text>')
    for g, group in enumerate(groups):
        x0 = _LEFT + g * slot + slot * 0.1
        for s, (name, values) in enumerate(series):
            value = values[g]
            height = plot_h * value / top if top else 0
            x, y = x0 + s * bar, _TOP + plot_h - height
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar * 0.92:.1f}" height="{height:.1f}" '
                f'fill="{PALETTE[s % len(PALETTE)]}"><title>{escape(name)} · {escape(group)}: '
                f"{value:.{digits}f}{escape(unit)}</title></rect>"
            )
            parts.append(
                f'<text x="{x + bar * 0.46:.1f}" y="{y - 3:.1f}" text-anchor="middle" font-size="9">'
                f"{value:.{digits}g}</text>"
            )
        parts.append(
            f'<text x="{_LEFT + g * slot + slot / 2:.1f}" y="{_TOP + plot_h + 16}" text-anchor="middle">'
            f"{escape(group)}</text>"
        )
    parts.append(_legend([name for name, _ in series]))
    parts.append("</svg>")
    return "\n".join(parts)


def _legend(names: Sequence[str]) -> str:
    items, x = [], _LEFT
    y = _HEIGHT - 14
    for i, name in enumerate(names):
        items.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{PALETTE[i % len(PALETTE)]}"/>')
        items.append(f'<text x="{x + 14}" y="{y}">{escape(name)}</text>')
        x += 24 + 7 * len(name)
    return "\n".join(items)


def _nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5 or 5 times a power of ten that is at least ``value``."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * power:
            return step * power
    return 10 * power
