"""Live revisit check: ``crawl --revisit`` on the demo web with pages that change.

The demo web's "changing page" mode (``topicrawl.demoweb.changing``) makes every article of
two hosts change as a Poisson process (log-normal rates, median 0.5 a day) on a simulated
clock where a day lasts ``--day`` seconds. The crawl runs ``--days`` simulated days with its
default revisit policy (change rates -> freshness-optimal intervals for the default budget,
rounded to the tiers 1/3/7 days). Afterwards, from the site's own change log:

- freshness: the share of articles whose stored version is the live one, averaged over the
  second half of the run (the first half learns the rates);
- change detection: of the re-fetches, how many the crawler called changed (text hash or
  304) against whether the site's version really moved;
- the same fetch budget spent uniformly, and the oracle's optimum (knowing the true rates),
  in closed form for comparison.

    PYTHONPATH=src .venv/bin/python benchmarks/revisit/live.py --days 30 --day 2
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sqlite3
import tempfile
import time
from pathlib import Path

import numpy as np

from topicrawl.core.config import CrawlSettings
from topicrawl.demoweb import DemoWeb, DemoWebServer, Kind
from topicrawl.demoweb.changing import ChangeLog
from topicrawl.engine.build import run_crawl
from topicrawl.revisit.refresh import expected_freshness, optimal_rates, uniform_rates

HOSTS = ("127.0.0.3", "127.0.0.4")  # the first host serves the hostile "lab": left out


POLICIES = {
    # Both spend about (known pages) / 3 revisits a day.
    "change-rate (default)": {},
    "uniform, every 3 days": {"mode": "tiers", "periods_days": (3.0, 3.0, 3.0)},
}


async def run_once(web: DemoWeb, args: argparse.Namespace, extra: dict[str, object]) -> None:
    """One revisit crawl against a fresh change log; prints what the log says of it."""
    bound = web.at_port(1)
    articles = [
        (page.host, page.path)
        for page in (bound.find(u) for u in bound.urls(documents_only=True))
        if page is not None and page.kind is Kind.ARTICLE and page.host in HOSTS
    ]
    start = time.time() + 1.0
    log = ChangeLog(articles, seed=args.seed, start=start, day_seconds=args.day, days=args.days + 2)
    server = DemoWebServer(web, changes=log)
    with server.run_in_thread(), tempfile.TemporaryDirectory() as tmp:
        bases = server.web.bases()
        db = Path(tmp) / "live.db"
        revisit = {"enabled": True, "day_seconds": args.day, "max_seconds": args.days * args.day}
        settings = CrawlSettings(
            seeds=[bases[h] for h in HOSTS],
            max_pages=0,
            concurrency=4,
            parse_workers=0,
            politeness={"delay": 0.0},
            scope={"allowed_domains": list(HOSTS)},
            frontier={"kind": "sqlite"},
            storage={"url": str(db), "flush_interval": 0.5},
            revisit={**revisit, **extra},
        )  # type: ignore[arg-type]
        began = time.time()
        await run_crawl(settings)
        ended = time.time()
        with sqlite3.connect(db) as con:
            rows = con.execute(
                "SELECT url, fetched_at, status, changed FROM page_history ORDER BY id"
            ).fetchall()
    base_of = {bases[h]: h for h in HOSTS}
    fetches: dict[tuple[str, str], list[tuple[float, bool]]] = {}
    for url, at, _status, changed in rows:
        for base, host in base_of.items():
            if url.startswith(base):
                fetches.setdefault((host, "/" + url[len(base) :]), []).append((at, bool(changed)))
    keys = [k for k in articles if k in fetches]
    # Freshness over the second half, on a grid.
    grid = np.linspace(began + 0.5 * (ended - began), ended, 400)
    fresh = []
    for t in grid:
        ok = 0
        for key in keys:
            seen = [at for at, _ in fetches[key] if at <= t]
            if seen and log.version(*key, seen[-1]) == log.version(*key, t):
                ok += 1
        fresh.append(ok / len(articles))
    # Change detection against the change log.
    tp = fp = fn = tn = 0
    for key in keys:
        visits = fetches[key]
        for (before, _), (at, said) in itertools.pairwise(visits):
            moved = log.version(*key, at) != log.version(*key, before)
            tp += said and moved
            fp += said and not moved
            fn += (not said) and moved
            tn += (not said) and not moved
    # The budget spent on articles in the measured half, uniform and optimal in closed form.
    days_run = (ended - began) / args.day
    window_days = (ended - grid[0]) / args.day
    refetches = sum(1 for k in keys for at, _ in fetches[k] if at >= grid[0])
    budget = refetches / window_days / len(articles)  # per page per day
    rates = np.array([log.rates[k] for k in articles])
    uniform = float(
        expected_freshness(rates, uniform_rates(len(rates), budget * len(rates))).mean()
    )
    oracle = float(
        expected_freshness(
            rates, optimal_rates(rates, np.ones(len(rates)), budget * len(rates))
        ).mean()
    )
    changes = sum(len(log.times(*k)) for k in articles)
    print(
        f"articles {len(articles)} (fetched {len(keys)}), {days_run:.1f} simulated days of "
        f"{args.day:g} s, {changes} changes in the log, {len(rows)} fetches of every page"
    )
    every = sum(1 for _, at, _, _ in rows if at >= grid[0])
    print(
        f"fetches in the measured half: {every} of every page, {refetches} of articles"
        f" ({budget:.3f} per article per day)"
    )
    print(f"freshness (second half, vs the change log): {np.mean(fresh):.3f}")
    print(f"same budget, closed form: uniform {uniform:.3f}, oracle {oracle:.3f}")
    print(f"change detection: {tp} true, {fp} false changes; {fn} missed, {tn} true unchanged")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=float, default=30.0)
    parser.add_argument("--day", type=float, default=2.0, help="seconds in a simulated day")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    web = DemoWeb.generate(seed=args.seed, hosts=3, pages_per_host=20)
    for name, extra in POLICIES.items():
        print(f"\n## {name}")
        await run_once(web, args, extra)


if __name__ == "__main__":
    asyncio.run(main())
