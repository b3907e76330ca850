"""Freshness benchmark: every revisit policy on one fetch budget over a simulated web.

A web of ``--pages`` pages whose change rates are log-normal (heavy-tailed) and whose
popularity is correlated with the change rate at several degrees; each policy fetches
``--budget`` x pages a day for ``--days`` days; popularity-weighted freshness and age are
averaged after ``--warmup`` days. 20 seeds per correlation, mean and 95 % t-interval.
Uniform's simulated freshness is checked against its closed form ``(f / rate)(1 - e^(-rate/f))``.

    PYTHONPATH=src .venv/bin/python benchmarks/revisit/freshness.py > freshness.md
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time

import numpy as np

from topicrawl.revisit.refresh import expected_freshness
from topicrawl.revisit.simulate import make_web, simulate, standard_policies

T_975 = {20: 2.093, 10: 2.262, 5: 2.776, 3: 4.303, 2: 12.706}


def interval(values: list[float]) -> tuple[float, float]:
    """Mean and half-width of the 95 % t-interval."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, math.nan
    t = T_975.get(len(values), 1.96)
    return mean, t * statistics.stdev(values) / math.sqrt(len(values))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--budget", type=float, default=0.2, help="fetches a day per page")
    parser.add_argument("--days", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=20.0)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--correlations", default="0.0,0.5,0.9")
    parser.add_argument("--only", default="", help="comma-separated policy names (default all)")
    args = parser.parse_args()
    started = time.time()
    print(
        f"pages {args.pages}, budget {args.budget} fetches/page/day, {args.days:g} days "
        f"(first {args.warmup:g} not measured), hourly steps, {args.seeds} seeds; "
        "mean +- 95 % interval\n"
    )
    for corr in (float(c) for c in args.correlations.split(",")):
        fresh: dict[str, list[float]] = {}
        age: dict[str, list[float]] = {}
        ratio: dict[str, list[float]] = {}
        closed_gap: list[float] = []
        for seed in range(args.seeds):
            web = make_web(args.pages, np.random.default_rng(seed), correlation=corr)
            budget = args.budget * web.size
            results = {}
            wanted = {name for name in args.only.split(",") if name}
            for policy in standard_policies(web, budget):
                if (
                    wanted
                    and policy.name not in wanted
                    and policy.name not in {"oracle", "uniform"}
                ):
                    continue
                out = simulate(
                    web,
                    policy,
                    np.random.default_rng(1000 + seed),
                    budget=budget,
                    days=args.days,
                    warmup=args.warmup,
                )
                results[policy.name] = out
                fresh.setdefault(policy.name, []).append(out.freshness)
                age.setdefault(policy.name, []).append(out.age)
            oracle = results["oracle"].freshness
            for name, out in results.items():
                ratio.setdefault(name, []).append(out.freshness / oracle)
            closed = float(
                (
                    web.popularity * expected_freshness(web.rates, np.full(web.size, args.budget))
                ).sum()
            )
            closed_gap.append(results["uniform"].freshness / closed - 1.0)
            print(f"  correlation {corr}: seed {seed} done", file=sys.stderr)
        print(f"### popularity-rate correlation {corr}\n")
        print("| policy | freshness | age (days) | freshness / oracle's |")
        print("|---|---|---|---|")
        for name, values in fresh.items():
            f_mean, f_half = interval(values)
            a_mean, a_half = interval(age[name])
            r_mean, r_half = interval(ratio[name])
            print(
                f"| {name} | {f_mean:.4f} +- {f_half:.4f} | {a_mean:.3f} +- {a_half:.3f} "
                f"| {100 * r_mean:.1f} % +- {100 * r_half:.1f} |"
            )
        g_mean, g_half = interval(closed_gap)
        print(
            f"\nuniform simulated vs closed form: {100 * g_mean:+.2f} % +- {100 * g_half:.2f} "
            "(hourly steps)\n"
        )
    print(f"wall {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
