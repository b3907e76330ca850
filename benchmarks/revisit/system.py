"""Freshness of seed 004's system as a whole: ``topicrawl video run`` on the demo video site.

The issue's "Live" benchmark for the video site: the system (first crawl with the parser
library, popularity -> tiers, weekly re-plans, revisits with conditional requests) runs on the
demo video site, whose plays, comments and favourites grow with the clock (heavy-tailed growth
rates; a page's written counts change when their rounded value moves). A simulated clock runs
``--days`` days in seconds; the microblog side is left out (no ``--api``), so every revisit is
a page revisit.

Freshness is measured against the site's own truth (``VideoSite.truth_at``), not against what
the system reports: a page's stored copy dates from its last answered visit (200 or 304) or
from the first crawl at day 0, and is fresh at day ``t`` when the counts the site writes at
``t`` are those it wrote then. Only pages that carry counts are scored (detail and play
pages). Over the second half of the run, on a grid of ``--step`` days:

- freshness, plain and weighted by the page's true plays at ``t`` (the seed's reason for
  tiers: popular videos matter more);
- age: days since the site's counts first moved past the stored copy (0 when fresh).

Policies, each at the page-revisit budget the seed's tiers spend in the same seed's run:

- ``tiers``: the seed's tiers as written (20 % of videos daily, 30 % every 3 days, the rest
  weekly, by the popularity of the extracted counts and their growth, re-planned weekly);
- ``uniform``: every video's pages every P days, P = days / ceil(the tiers' revisits a page),
  so that uniform spends at least the tiers' budget (a page's visits come in whole numbers);
- ``change-rate``: ``video run --policy change-rate``: each page's freshness-optimal interval
  from its estimated change rate, weighted by its video's extracted plays, for the visits a
  day the tiers would spend on the same pages (re-planned daily).

and two oracles, computed from the site's truth rather than run: each knows when every page's
counts change (on the scoring grid) and, for a budget of the tiers' answered revisits of
scored pages inside the window, fetches each chosen page at the grid point its counts change
(or at the window's start when they changed since its copy), picking the changes that keep
pages fresh longest: weighted by the page's plays (``oracle``, optimal for plays-weighted
freshness) or not (``oracle-plain``, optimal for plain freshness). A fetch made at a change
keeps the page fresh until the next one, so the best choice for a budget is the changes with
the most fresh (weighted) grid points before the next change; exact on the grid.

(A control with the ranking reversed is not run: ``TierPolicy`` keeps periods rising from
tier 1 to 3, so it cannot be expressed without a code change.)

    PYTHONPATH=src .venv/bin/python benchmarks/revisit/system.py --seeds 5 --titles 40 --days 28
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from topicrawl.demoweb.seed004 import Seed004Demo
from topicrawl.demoweb.video.site import VideoSite
from topicrawl.engine.videosystem import VideoSystem, VideoSystemSettings
from topicrawl.revisit.clock import SimulatedClock
from topicrawl.revisit.tiers import DAY, TierPolicy
from topicrawl.storage.videostore import VideoStore

START = 1_800_000_000.0
COUNTS = ("plays", "comments", "favourites")


def _path(url: str) -> str:
    return "/" + url.split("/", 3)[3]


def _counts(site: VideoSite, path: str, day: float) -> tuple[object, ...]:
    fields = site.truth_at(path, day).fields
    return tuple(fields.get(k) for k in COUNTS)


def score(
    site: VideoSite,
    copies: dict[str, list[float]],
    *,
    window: tuple[float, float],
    step: float,
) -> tuple[float, float, float, float, int]:
    """Freshness and mean age (each plain and plays-weighted) over ``window`` (days) of the pages in
    ``copies`` (path -> sorted days its stored copy was refreshed; day 0 is the first crawl).

    Pages whose counts never move in the window's span are left out: nothing can be stale.
    """
    begin, end = window
    grid = [begin + i * step for i in range(int((end - begin) / step) + 1)]
    fresh = weighted = total_weight = age = weighted_age = 0.0
    scored = 0
    for path, days in copies.items():
        if _counts(site, path, 0.0) == _counts(site, path, end):
            continue
        scored += 1
        at = 0
        changed_at: dict[float, float] = {}  # copy's day -> first grid day its counts moved
        for t in grid:
            while at + 1 < len(days) and days[at + 1] <= t:
                at += 1
            copy = days[at]
            weight = float(site.truth_at(path, t).fields.get("plays") or 0)
            total_weight += weight
            if _counts(site, path, copy) == _counts(site, path, t):
                fresh += 1
                weighted += weight
                continue
            moved = changed_at.setdefault(copy, t)
            age += t - moved
            weighted_age += weight * (t - moved)
    points = scored * len(grid)
    if not points:
        raise ValueError("no page with counts that move in the window")
    norm = max(total_weight, 1.0)
    return fresh / points, weighted / norm, age / points, weighted_age / norm, scored


def oracle(
    site: VideoSite,
    pages: list[str],
    budget: int,
    *,
    window: tuple[float, float],
    step: float,
    weighted: bool,
) -> dict[str, list[float]]:
    """The refresh days (path -> sorted days, day 0 the first crawl) of the policy that knows
    each page's change times on ``window``'s grid and spends ``budget`` fetches on the changes
    whose copy stays fresh longest (plays-weighted when ``weighted``). Only pages whose counts
    move are considered, as in :func:`score`.
    """
    begin, end = window
    grid = [begin + i * step for i in range(int((end - begin) / step) + 1)]
    gains: list[tuple[float, str, float]] = []  # (fresh weight a fetch gives, path, day)
    for path in pages:
        if _counts(site, path, 0.0) == _counts(site, path, end):
            continue
        state = _counts(site, path, 0.0)  # the first crawl's copy
        start: float | None = None
        gain = 0.0
        for t in grid:
            now = _counts(site, path, t)
            if now != state:  # a change: what a fetch at the last one gave ends here
                if start is not None:
                    gains.append((gain, path, start))
                state, start, gain = now, t, 0.0
            gain += float(site.truth_at(path, t).fields.get("plays") or 0) if weighted else 1.0
        if start is not None:
            gains.append((gain, path, start))
    gains.sort(reverse=True)
    copies: dict[str, list[float]] = {path: [0.0] for path in pages}
    for _, path, day in gains[:budget]:
        copies[path].append(day)
    for days_of in copies.values():
        days_of.sort()
    return copies


def window_visits(
    site: VideoSite, copies: dict[str, list[float]], *, window: tuple[float, float]
) -> int:
    """Refreshes inside ``window`` of the pages :func:`score` scores (counts that move)."""
    begin, end = window
    return sum(
        sum(1 for day in days if begin <= day <= end)
        for path, days in copies.items()
        if _counts(site, path, 0.0) != _counts(site, path, end)
    )


async def run_policy(
    seed: int, titles: int, days: float, tiers: TierPolicy, folder: Path, policy: str = "tiers"
) -> tuple[VideoSite, dict[str, list[float]], int, int]:
    """One system run; the site, each page's refresh days, page revisits and failed ones."""
    clock = SimulatedClock(START)
    db = str(folder / f"video-{seed}-{id(tiers)}-{policy}.db")
    with Seed004Demo(clock, titles=titles, seed=seed) as demo:
        settings = VideoSystemSettings(
            site=demo.site_url,
            db=db,
            parsers=str(demo.write_schemas(folder / f"schemas-{seed}.toml")),
            days=days,
            tiers=tiers,
            policy=policy,
        )
        report = await VideoSystem(settings, clock=clock).run()
        site, start = demo.site, demo.start
    async with VideoStore(db, read_only=True) as store:
        visits = await store.visits()
        records = await store.records()
    copies: dict[str, list[float]] = {_path(url): [0.0] for url in records}
    for visit in visits:
        if visit["kind"] == "page" and visit["status"] in (200, 304):
            copies.setdefault(_path(visit["item"]), [0.0]).append(
                (visit["visited_at"] - start) / DAY
            )
    for days_of in copies.values():
        days_of.sort()
    return site, copies, report.page_visits, report.failed_visits


def _interval(values: list[float]) -> str:
    mean = statistics.fmean(values)
    if len(values) < 2:
        return f"{mean:.3f}"
    half = 1.96 * statistics.stdev(values) / math.sqrt(len(values))
    return f"{mean:.3f} ± {half:.3f}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="demo sites (seeds 0..N-1)")
    parser.add_argument("--titles", type=int, default=40)
    parser.add_argument("--days", type=float, default=28.0)
    parser.add_argument("--step", type=float, default=0.05, help="grid step in days")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("system.json"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    window = (args.days / 2, args.days)
    rows: list[dict[str, Any]] = []
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="system-freshness-") as tmp:
        folder = Path(tmp)
        for seed in range(args.seeds):
            seeds_tiers = TierPolicy.in_days()
            site, copies, spent, failed = await run_policy(
                seed, args.titles, args.days, seeds_tiers, folder
            )
            runs = {"tiers": (seeds_tiers, copies, spent, failed)}
            period = args.days / math.ceil(spent / max(len(copies), 1))
            uniform = TierPolicy.in_days(periods_days=(period, period, period))
            _, other, spent_u, failed_u = await run_policy(
                seed, args.titles, args.days, uniform, folder
            )
            runs["uniform"] = (uniform, other, spent_u, failed_u)
            _, rated, spent_c, failed_c = await run_policy(
                seed, args.titles, args.days, seeds_tiers, folder, "change-rate"
            )
            runs["change-rate"] = (seeds_tiers, rated, spent_c, failed_c)
            budget = window_visits(site, copies, window=window)
            for name, weighted in (("oracle", True), ("oracle-plain", False)):
                known = oracle(
                    site, sorted(copies), budget, window=window, step=args.step, weighted=weighted
                )
                runs[name] = (seeds_tiers, known, budget, 0)
            for name, (_, pages, visits, lost) in runs.items():
                fresh, weighted, age, weighted_age, scored = score(
                    site, pages, window=window, step=args.step
                )
                row = {
                    "seed": seed,
                    "policy": name,
                    "freshness": fresh,
                    "weighted": weighted,
                    "age_days": age,
                    "weighted_age_days": weighted_age,
                    "scored_pages": scored,
                    "pages": len(pages),
                    "revisits": visits,
                    "window_revisits": window_visits(site, pages, window=window),
                    "failed": lost,
                    "uniform_period_days": period,
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    print(f"\n{args.seeds} seeds, {args.titles} titles, {args.days:g} days, window {window}")
    print(
        "| policy | revisits | in the window, of scored pages | freshness "
        "| plays-weighted freshness | age (days) | plays-weighted age (days) |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in dict.fromkeys(r["policy"] for r in rows):
        mine = [r for r in rows if r["policy"] == name]
        print(
            f"| {name} | {statistics.fmean(r['revisits'] for r in mine):.0f} | "
            f"{statistics.fmean(r['window_revisits'] for r in mine):.0f} | "
            f"{_interval([r['freshness'] for r in mine])} | "
            f"{_interval([r['weighted'] for r in mine])} | "
            f"{_interval([r['age_days'] for r in mine])} | "
            f"{_interval([r['weighted_age_days'] for r in mine])} |"
        )
    print(f"wall {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    asyncio.run(main())
