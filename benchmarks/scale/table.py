"""Tables and the plot of ``run.py report``: one series of rows per crawler."""

from __future__ import annotations

from pathlib import Path
from typing import Any

Series = dict[str, list[dict[str, Any]]]
COLORS = {"topicrawl": "tab:blue", "scrapy-memory": "tab:orange", "scrapy-jobdir": "tab:green"}


def _at_marks(rows: list[dict[str, Any]], every: int) -> list[dict[str, Any]]:
    """The first row at or past each multiple of ``every`` pages, and the last row."""
    out: list[dict[str, Any]] = []
    mark = every
    for row in rows:
        if row["pages"] >= mark:
            out.append(row)
            mark = (row["pages"] // every + 1) * every
    if rows and (not out or out[-1] is not rows[-1]):
        out.append(rows[-1])
    return out


def _web_cpu(row: dict[str, Any]) -> str:
    value = row.get("web_cpu_ms_per_served")
    return "-" if value is None else f"{value}"


def markdown(series: Series, *, every: int) -> str:
    head = (
        "| crawler | pages | s | pages/s (interval) | CPU ms/page | RSS MB (processes) | "
        "DB MB | frontier MB | queued | web CPU ms/page served | load |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for crawler, rows in series.items():
        for row in _at_marks(rows, every):
            procs = " + ".join(f"{v:.0f}" for v in row.get("rss_mb", {}).values())
            lines.append(
                f"| {crawler} | {row['pages']:,} | {row['seconds']:,.0f} | {row['pages_per_s']} | "
                f"{row['cpu_ms_per_page']} | {row['rss_total_mb']:.0f} ({procs}) | "
                f"{row.get('db_mb', '-')} | {row.get('frontier_mb', '-')} | "
                f"{row.get('queued', '-') or '-'} | {_web_cpu(row)} | "
                f"{row['load'][0]} |"
            )
    return head + "\n".join(lines) + "\n"


def plot(series: Series, out: Path) -> None:
    # Imported here: matplotlib is in the bench extra only, and the tables need it not.
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    panels = [
        ("pages_per_s", "pages/s (per interval)"),
        ("cpu_ms_per_page", "CPU ms per page (all processes)"),
        ("rss_total_mb", "RSS MB (all processes of the crawl)"),
        ("db_mb", "database / JOBDIR MB on disk"),
    ]
    for ax, (key, title) in zip(axes.flat, panels, strict=True):
        for crawler, rows in series.items():
            field = key
            if key == "db_mb" and not any("db_mb" in r for r in rows):
                field = "frontier_mb"
            points = [(r["pages"], r[field]) for r in rows if r.get(field) is not None]
            if points:
                xs, ys = zip(*points, strict=True)
                ax.plot(xs, ys, marker=".", label=crawler, color=COLORS.get(crawler))
        ax.set_title(title)
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("pages crawled")
    axes[0][0].legend()
    fig.suptitle("Scale web, breadth first, 128 in flight, 8 per host (loaded shared machine)")
    fig.tight_layout()
    fig.savefig(out, dpi=90)
