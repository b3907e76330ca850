"""A self-contained HTML page charting each topic's heat history and forecasts.

The page is static: inline SVG and CSS, no script at all, and a Content-Security-Policy that
forbids any (topic words come from posts, which are hostile: every text is escaped).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from pathlib import Path

from topicrawl.topics.store import COMBINED, ForecastRecord, StoredHeat, TrackingHistory

__all__ = ["render_chart", "write_chart"]

_WIDTH, _HEIGHT, _PAD = 640, 220, 40
_SERIES = (
    # (method, colour, dash, label)
    ("real", "#1f77b4", "", "real heat"),
    (COMBINED, "#ff7f0e", "6 4", "forecast (entropy mix)"),
    ("des", "#2ca02c", "2 3", "DES"),
    ("bp", "#9467bd", "2 3", "BP net"),
)


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _points(
    series: Sequence[tuple[int, float]], first: int, last: int, top: float
) -> list[tuple[float, float]]:
    span = max(1, last - first)
    return [
        (
            _PAD + (period - first) / span * (_WIDTH - 2 * _PAD),
            _HEIGHT - _PAD - (max(0.0, value) / top) * (_HEIGHT - 2 * _PAD),
        )
        for period, value in series
    ]


def _svg(
    heats: Sequence[StoredHeat], forecasts: Sequence[ForecastRecord], first: int, last: int
) -> str:
    lines: dict[str, list[tuple[int, float]]] = {"real": [(h.period, h.heat) for h in heats]}
    for f in forecasts:
        lines.setdefault(f.method, []).append((f.target_period, f.value))
    values = [v for series in lines.values() for _, v in series if math.isfinite(v)]
    top = max([*values, 1e-9]) * 1.1
    parts = [
        f'<svg viewBox="0 0 {_WIDTH} {_HEIGHT}" width="{_WIDTH}" height="{_HEIGHT}" '
        'role="img" xmlns="http://www.w3.org/2000/svg">',
        f'<line x1="{_PAD}" y1="{_HEIGHT - _PAD}" x2="{_WIDTH - _PAD}" y2="{_HEIGHT - _PAD}" '
        'stroke="#888"/>',
        f'<line x1="{_PAD}" y1="{_PAD}" x2="{_PAD}" y2="{_HEIGHT - _PAD}" stroke="#888"/>',
        f'<text x="4" y="{_PAD}" font-size="11">{top:.0f}</text>',
        f'<text x="4" y="{_HEIGHT - _PAD}" font-size="11">0</text>',
    ]
    span = max(1, last - first)
    step = max(1, span // 12)
    for period in range(first, last + 1, step):
        x = _PAD + (period - first) / span * (_WIDTH - 2 * _PAD)
        parts.append(
            f'<text x="{x:.1f}" y="{_HEIGHT - _PAD + 16}" font-size="11" '
            f'text-anchor="middle">{period}</text>'
        )
    for method, colour, dash, label in _SERIES:
        series = sorted(p for p in lines.get(method, []) if math.isfinite(p[1]))
        if not series:
            continue
        points = _points(series, first, last, top)
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="2"{dash_attr} '
            f'points="{path}"><title>{_esc(label)}</title></polyline>'
        )
        for (x, y), (period, value) in zip(points, series, strict=True):
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{colour}">'
                f"<title>{_esc(label)}, period {period}: {value:.2f}</title></circle>"
            )
    parts.append("</svg>")
    return "".join(parts)


def render_chart(history: TrackingHistory) -> str:
    """The HTML page for a tracking history: one chart per topic, active and hottest first."""
    if history.periods:
        first = history.periods[0].period
        last = history.periods[-1].period + 1  # forecasts reach one period past the last
    else:
        first, last = 0, 1
    legend = " ".join(
        f'<span style="color:{colour}">&#9632; {_esc(label)}</span>'
        for _, colour, _, label in _SERIES
    )

    def recent(topic_id: int) -> float:
        heats = history.heat.get(topic_id, ())
        return heats[-1].heat if heats else 0.0

    sections = []
    # Active topics first, the hottest on top; retired ones after them.
    ordered = sorted(history.topics, key=lambda t: (t.retired_at is not None, -recent(t.topic_id)))
    for topic in ordered:
        heats = history.heat.get(topic.topic_id, ())
        forecasts = history.forecasts.get(topic.topic_id, ())
        words = ", ".join(f"{w} ({v:.2f})" for w, v in list(topic.words.items())[:10])
        status = (
            f"retired in period {topic.retired_at}" if topic.retired_at is not None else "active"
        )
        weights = [f for f in forecasts if f.method != COMBINED]
        latest = max((f.target_period for f in weights), default=None)
        weight_text = ", ".join(
            f"{_esc(f.method)} {f.weight:.2f}" for f in weights if f.target_period == latest
        )
        sections.append(
            f"<section><h2>topic {topic.topic_id}</h2>"
            f"<p>{_esc(words)}</p>"
            f"<p class=meta>first seen in period {topic.first_seen}, last matched by a cluster "
            f"in period {topic.last_seen}, {_esc(status)}"
            f"{'; latest entropy weights: ' + weight_text if weight_text else ''}</p>"
            f"{_svg(heats, forecasts, first, last)}</section>"
        )
    return (
        "<!DOCTYPE html><html><head><meta charset=utf-8>"
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        "<title>topicrawl: topic heat</title><style>"
        "body{font-family:sans-serif;margin:2em;max-width:60em}"
        "section{margin-bottom:2em}.meta{color:#555;font-size:90%}"
        "</style></head><body><h1>Topic heat and forecasts</h1>"
        f"<p>{len(history.periods)} periods, {len(history.topics)} topics. {legend}</p>"
        + "".join(sections)
        + "</body></html>"
    )


def write_chart(history: TrackingHistory, path: Path) -> None:
    """Write :func:`render_chart` to ``path`` (UTF-8)."""
    path.write_text(render_chart(history), encoding="utf-8")
