"""Heat benchmarks: forecast accuracy (DES, BP, entropy mix, naive) and topic discovery quality.

Forecasts: one-step-ahead, rolling origin (each origin sees only the past), MAPE and RMSE, on
the demo microblog's true topic heat series and on real yearly series shipped inside
statsmodels (Nile river flow, sunspot activity). Discovery: adjusted Rand index and purity of
the topics found per period against the demo microblog's true topics, Chinese and English
apart, and of the full tracking loop (cross-period topic identity included).

Usage: .venv/bin/python benchmarks/heat/run.py [--seeds 1 2 3] [--periods 24] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
from sklearn.metrics import adjusted_rand_score

from topicrawl.demoweb.microblog import MicroblogWorld, MicroPost
from topicrawl.topics.allocation import CpuUsage
from topicrawl.topics.discovery import JiebaTokenizer, TopicDiscoverer
from topicrawl.topics.evaluation import rolling_origin
from topicrawl.topics.forecast import (
    BpForecaster,
    DesForecaster,
    EntropyVariant,
    Forecaster,
    HeatForecaster,
    NaiveForecaster,
)
from topicrawl.topics.tracker import TopicTracker, TrackerOptions

FIRST_ORIGIN = 4


def methods() -> dict[str, Callable[[Sequence[float]], float]]:
    des = DesForecaster(alpha="volatility")
    bp = BpForecaster()
    combo = HeatForecaster(forecasters=(DesForecaster(alpha="volatility"), BpForecaster()))
    stable = HeatForecaster(
        forecasters=(DesForecaster(alpha="volatility"), BpForecaster()),
        variant=EntropyVariant.STABILITY,
    )
    auto = HeatForecaster(forecasters=(DesForecaster(alpha="auto"), BpForecaster()))
    singles: dict[str, Forecaster] = {
        "naive": NaiveForecaster(),
        "DES a=0.3": DesForecaster(alpha=0.3),
        "DES volatility": des,
        "DES auto": DesForecaster(alpha="auto"),
        "BP": bp,
    }
    out: dict[str, Callable[[Sequence[float]], float]] = {
        name: (lambda h, m=m: m.predict(h).value) for name, m in singles.items()
    }
    out["entropy(DES vol + BP)"] = lambda h: combo.forecast(h).value
    out["entropy stability(DES vol + BP)"] = lambda h: stable.forecast(h).value
    out["entropy(DES auto + BP)"] = lambda h: auto.forecast(h).value
    return out


def evaluate(series: Sequence[float]) -> dict[str, tuple[float | None, float | None]]:
    results = {}
    for name, forecast in methods().items():
        run = rolling_origin(series, forecast, first_origin=FIRST_ORIGIN)
        results[name] = (run.mape, run.rmse)
    return results


def real_series() -> dict[str, list[float]]:
    import statsmodels.api as sm  # noqa: PLC0415 - optional (bench extra)

    nile = sm.datasets.nile.load_pandas().data["volume"].astype(float).tolist()
    sun = sm.datasets.sunspots.load_pandas().data["SUNACTIVITY"].astype(float).tolist()
    return {"Nile flow 1871-1970 (100 y)": nile, "sunspots 1889-2008 (120 y)": sun[-120:]}


def forecast_table(
    title: str, rows: dict[str, dict[str, tuple[float | None, float | None]]]
) -> str:
    names = list(next(iter(rows.values())))
    lines = [f"### {title}", "", "| series | " + " | ".join(names) + " |"]
    lines.append("|---" * (len(names) + 1) + "|")
    mape_sum: dict[str, list[float]] = {n: [] for n in names}
    rel_rmse: dict[str, list[float]] = {n: [] for n in names}
    for series, result in rows.items():
        cells = []
        naive_rmse = result["naive"][1] or 1.0
        for n in names:
            m, r = result[n]
            cells.append(f"{m:.1f}% / {r:.2f}" if m is not None and r is not None else "-")
            if m is not None:
                mape_sum[n].append(m)
            if r is not None:
                rel_rmse[n].append(r / naive_rmse)
        lines.append(f"| {series} | " + " | ".join(cells) + " |")
    lines.append(
        "| **mean MAPE / mean RMSE relative to naive** | "
        + " | ".join(
            f"**{statistics.fmean(mape_sum[n]):.1f}% / {statistics.fmean(rel_rmse[n]):.3f}**"
            for n in names
        )
        + " |"
    )
    return "\n".join(lines)


# -- discovery ---------------------------------------------------------------------------------


def purity(truth: Sequence[str], found: Sequence[str]) -> float:
    clusters: dict[str, Counter[str]] = {}
    for t, f in zip(truth, found, strict=True):
        clusters.setdefault(f, Counter())[t] += 1
    return sum(c.most_common(1)[0][1] for c in clusters.values()) / len(truth)


def discovery_scores(world: MicroblogWorld, lang: str) -> list[tuple[float, float, float]]:
    keywords = [t.keyword for t in world.topics]
    discoverer = TopicDiscoverer(tokenizer=JiebaTokenizer(user_words=keywords), min_posts=3)
    scores = []
    for period in range(world.periods):
        posts = [p for p in world.posts_of(period) if p.lang == lang]
        if len(posts) < 4:
            continue
        topics = discoverer.discover([p.text for p in posts])
        label = {m: f"c{k}" for k, t in enumerate(topics) for m in t.members}
        found = [label.get(i, f"noise{i}") for i in range(len(posts))]
        truth = [p.topic or "chatter" for p in posts]
        clustered = [i for i in range(len(posts)) if i in label]
        coverage = len(clustered) / len(posts)
        inside = purity([truth[i] for i in clustered], [found[i] for i in clustered])
        scores.append((adjusted_rand_score(truth, found), inside, coverage))
    return scores


class WorldSource:
    """An in-process stand-in for the demo server: the posts up to ``period``, by keyword."""

    source = "demo"

    def __init__(self, world: MicroblogWorld) -> None:
        self.world = world
        self.period = 0

    def _find(self, match: Callable[[MicroPost], bool], since_id: str | None) -> list[object]:
        from topicrawl.sources.microblog import Post  # noqa: PLC0415

        since = int(since_id or 0)
        return [
            Post(
                str(p.id),
                p.text,
                p.created_at,
                p.author,
                p.reposts,
                p.likes,
                p.comments,
                "",
                p.links,
                p.tags,
                p.lang,
                "demo",
            )
            for p in sorted(self.world.posts, key=lambda p: -p.id)
            if p.period <= self.period and p.id > since and match(p)
        ]

    async def search(self, query: str, *, max_posts: int = 400, since_id: str | None = None):  # type: ignore[no-untyped-def]
        return self._find(lambda p: p.matches(query), since_id)[:max_posts]

    async def hashtag(self, tag: str, *, max_posts: int = 400, since_id: str | None = None):  # type: ignore[no-untyped-def]
        return self._find(lambda p: tag in p.tags, since_id)[:max_posts]


def tracking_scores(world: MicroblogWorld) -> list[float]:
    source = WorldSource(world)

    async def run() -> list[float]:
        tracker = TopicTracker(
            source=source,  # type: ignore[arg-type]
            options=TrackerOptions(keywords=world.keywords()),
            cpu_meter=lambda w: CpuUsage(capacity=200.0, total=40.0, own=0.0),
        )

        def advance(period: int) -> None:
            source.period = period

        reports = await tracker.track(world.periods, before_period=advance)
        out = []
        for r in reports:
            truth = [world.true_topic(pid) or "chatter" for pid in r.post_topics]
            found = [
                f"t{t}" if t is not None else f"n{i}" for i, t in enumerate(r.post_topics.values())
            ]
            out.append(adjusted_rand_score(truth, found))
        return out

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--periods", type=int, default=24)
    parser.add_argument("--quick", action="store_true", help="one seed, no real series")
    args = parser.parse_args()
    seeds = args.seeds[:1] if args.quick else args.seeds
    started = time.time()
    print(f"python {platform.python_version()}, seeds {seeds}, {args.periods} periods")

    demo_rows: dict[str, dict[str, tuple[float | None, float | None]]] = {}
    for seed in seeds:
        world = MicroblogWorld.generate(seed=seed, periods=args.periods)
        for topic in world.topics:
            series = list(world.heat_series(topic.id))
            series = series[topic.start :]  # the emerging topic's life only
            demo_rows[f"seed {seed} {topic.id} ({topic.trend})"] = evaluate(series)
    print()
    print(forecast_table("Demo microblog true heat (MAPE / RMSE)", demo_rows))
    if not args.quick:
        real_rows = {name: evaluate(series) for name, series in real_series().items()}
        print()
        print(forecast_table("Real series from statsmodels (MAPE / RMSE)", real_rows))

    print()
    print("### Topic discovery per period against the true topics")
    print()
    print(
        "| language | periods | ARI mean | ARI min | purity mean | purity min | posts clustered |"
    )
    print("|---|---|---|---|---|---|---|")
    for lang in ("en", "zh"):
        scores = [
            s
            for seed in seeds
            for s in discovery_scores(MicroblogWorld.generate(seed=seed, periods=12), lang)
        ]
        aris = [a for a, _, _ in scores]
        purities = [p for _, p, _ in scores]
        coverage = [c for _, _, c in scores]
        print(
            f"| {lang} | {len(scores)} | {np.mean(aris):.3f} | {min(aris):.3f} | "
            f"{np.mean(purities):.3f} | {min(purities):.3f} | {np.mean(coverage):.1%} |"
        )
    tracked = [
        a for seed in seeds for a in tracking_scores(MicroblogWorld.generate(seed=seed, periods=12))
    ]
    print(
        f"| both, full tracking loop (topic ids across periods) | {len(tracked)} | "
        f"{np.mean(tracked):.3f} | {min(tracked):.3f} | - | - | - |"
    )
    print()
    print(f"total {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
