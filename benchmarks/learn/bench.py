"""Stages 2-4 of the assignment benchmark: tune every policy with the same budget, train the
DQN, test once, compare with paired intervals.

    PYTHONPATH=src:benchmarks/learn .venv/bin/python benchmarks/learn/bench.py tune
    PYTHONPATH=src:benchmarks/learn .venv/bin/python benchmarks/learn/bench.py test
    PYTHONPATH=src:benchmarks/learn .venv/bin/python benchmarks/learn/bench.py report

Seeds: the DQN trains on 0-9 (families steady and bursts, load and staleness drawn per
episode), every policy is tuned on 100-109 (steady and bursts, loads 0.7 and 0.9, 1 s stale;
at most 4 settings each: the budget), and tested once on 1000-1019 in every family (flash
and churn held out of training and tuning), loads 0.5/0.7/0.9, staleness 0/1/5 s. The DQN
with the tuned settings is trained with 3 agent seeds; the worst is reported. ``features.py``
must have run first (the URL features). The run in the README was scaled down (see there and
the constants below); a policy without a ``tune.json`` entry runs with its defaults.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sim import FAMILIES, Scenario, simulate
from world import make_world

from topicrawl.distributed.partition import AssignmentPolicy, RendezvousPolicy
from topicrawl.distributed.policies import (
    BoundedLoadPolicy,
    HashModPolicy,
    LeastLoadedPolicy,
    PlainRendezvousPolicy,
    ShortestDelayPolicy,
    SuccessTablePolicy,
    TwoChoicesPolicy,
)
from topicrawl.learn.dqn import DqnAgent, DqnConfig, DqnPolicy, hostid_feature

OUT = Path(__file__).parent / "out"
TRAIN = range(10)
TUNE = range(100, 110)
TEST = range(1000, 1020)
TRAIN_FAMILIES = ("steady", "bursts")
HELD_OUT = ("flash", "churn")
LOADS = (0.5, 0.7, 0.9)
STALES = (0.0, 1.0, 5.0)
AGENT_SEEDS = (0, 1, 2)

# The tuning budget: at most 4 settings per policy.
BASELINES: dict[str, list[dict[str, Any]]] = {
    "hash": [{}],
    "rendezvous-plain": [{}],
    "rendezvous": [{"min_weight": w} for w in (0.05, 0.1, 0.5, 1.0)],
    "bounded": [{"factor": f} for f in (1.0, 1.25, 1.5, 2.0)],
    "least-loaded": [{}],
    "sed": [{"latency_weight": w} for w in (0.25, 0.5, 0.75, 1.0)],
    "two-choices": [
        {"choices": c, "latency_weight": w} for c, w in ((2, 1.0), (2, 0.5), (3, 1.0), (3, 0.5))
    ],
    "success-table": [
        {"threshold": t, "decay": d} for t, d in ((0.5, 0.9), (0.3, 0.9), (0.5, 0.7), (0.3, 0.97))
    ],
}
# The same budget as every baseline's: at most 4 settings, each run on the 40 tuning scenarios
# (the agent is trained once per setting on the training seeds first; its training is on top).
DQN_SETTINGS: list[dict[str, Any]] = [
    {"threshold": 1.0, "gamma": 0.5},
    {"threshold": 0.5, "gamma": 0.5},
    {"threshold": 1.0, "gamma": 0.0},
    {"threshold": 1.0, "gamma": 0.9},
]
_CLASSES: dict[str, Callable[..., AssignmentPolicy]] = {
    "hash": HashModPolicy,
    "rendezvous-plain": PlainRendezvousPolicy,
    "rendezvous": RendezvousPolicy,
    "bounded": BoundedLoadPolicy,
    "least-loaded": LeastLoadedPolicy,
    "sed": ShortestDelayPolicy,
    "two-choices": TwoChoicesPolicy,
    "success-table": SuccessTablePolicy,
}

_FEATURES: dict[str, np.ndarray] = {}


def host_features(kind: str, dim: int = 16) -> Callable[[str], np.ndarray] | None:
    """Host name -> feature: the URL VAE's (from ``features.npz``), a host-id code, or none."""
    if kind == "none":
        return None
    if kind == "hostid":
        return hostid_feature(dim)
    if not _FEATURES:
        saved = np.load(OUT / "features.npz")
        for seed in saved.files:
            for host, code in zip(make_world(int(seed)).hosts, saved[seed], strict=True):
                _FEATURES[host] = code
    return _FEATURES.__getitem__


def tune_scenarios() -> list[Scenario]:
    return [
        Scenario(seed=s, family=f, load=load, stale=1.0)
        for s in TUNE
        for f in TRAIN_FAMILIES
        for load in (0.7, 0.9)
    ]


# The test grid: every load with every staleness ("full"), every load 1 s stale ("stale1"),
# or load 0.7 1 s stale ("load07": what the DQN agents were tested on when the machine was
# short of CPU: see the README).
GRIDS: dict[str, tuple[tuple[float, float], ...]] = {
    "full": tuple(itertools.product(LOADS, STALES)),
    "stale1": tuple((load, 1.0) for load in LOADS),
    "load07": ((0.7, 1.0),),
}


def scenarios_for_testing(grid: str, families: Sequence[str] = FAMILIES) -> list[Scenario]:
    """Seed by seed (every family and condition of a seed together), so a run cut short has
    covered every family alike."""
    return [
        Scenario(seed=s, family=f, load=load, stale=st)
        for s in TEST
        for f in families
        for load, st in GRIDS[grid]
    ]


def key(s: Scenario) -> str:
    return f"{s.family}/{s.seed}/{s.load}/{s.stale}"


def train_dqn(
    settings: dict[str, Any], seed: int, feature: str
) -> tuple[DqnAgent, dict[str, float]]:
    """Train an agent on the training seeds; returns it and what training cost."""
    torch.set_num_threads(1)
    config = DqnConfig(feature_dim=0 if feature == "none" else 16, epsilon_steps=10_000, **settings)
    agent = DqnAgent(config, seed=seed)
    rng = np.random.default_rng(seed)
    codes = host_features(feature)
    started = time.perf_counter()
    episodes = 0
    for s in TRAIN:  # one episode per training seed (scaled down for time: see the README)
        scenario = Scenario(
            seed=s,
            family=TRAIN_FAMILIES[s % 2],
            load=float(rng.choice(LOADS)),
            stale=float(rng.choice(STALES)),
        )
        simulate(scenario, make_world(s), DqnPolicy(agent, codes, training=True))
        episodes += 1
    cost = {
        "seconds": time.perf_counter() - started,
        "episodes": episodes,
        "decisions": agent.decisions,
        "learn_steps": agent.steps,
        "target_syncs": agent.syncs,
    }
    return agent, cost


def evaluate(spec: tuple[str, dict[str, Any], str], scenarios: list[Scenario]) -> dict[str, Any]:
    """Metrics of one policy setting on each scenario (a DQN is trained first)."""
    torch.set_num_threads(1)
    name, settings, feature = spec
    cost: dict[str, float] = {}
    results: dict[str, dict[str, float]] = {}
    if name.startswith("dqn"):
        seed = int(settings.pop("agent_seed", 0))
        agent, cost = train_dqn(settings, seed, feature)
        codes = host_features(feature)
        settings["agent_seed"] = seed
        make: Callable[[], AssignmentPolicy] = lambda: DqnPolicy(agent, codes)  # noqa: E731
    else:
        cls = _CLASSES[name]
        make = lambda: cls(**settings)  # noqa: E731
    worlds: dict[int, Any] = {}
    run = {"name": name, "settings": settings, "feature": feature, "cost": cost, "results": results}
    for s in scenarios:
        world = worlds.setdefault(s.seed, make_world(s.seed))
        results[key(s)] = simulate(s, world, make()).metrics()
        if name.startswith("dqn"):  # slow: what is done so far survives a run cut short
            (OUT / f"partial-{name}.json").write_text(json.dumps(run))
    return run


def mean_p95(run: dict[str, Any]) -> float:
    return float(np.mean([m["p95"] for m in run["results"].values()]))


def tune(workers: int, which: str, feature: str) -> None:
    specs: list[tuple[str, dict[str, Any], str]] = []
    if which in {"all", "baselines"}:
        specs += [(n, dict(s), "") for n, options in BASELINES.items() for s in options]
    if which in {"all", "dqn"}:
        specs += [("dqn", dict(s), feature) for s in DQN_SETTINGS]
    scenarios = tune_scenarios()
    with ProcessPoolExecutor(workers) as pool:
        runs = list(pool.map(evaluate, specs, itertools.repeat(scenarios)))
    path = OUT / "tune.json"
    best: dict[str, dict[str, Any]] = json.loads(path.read_text()) if path.exists() else {}
    for name in {run["name"] for run in runs}:
        best.pop(name, None)
    for run in runs:
        run["mean_p95"] = mean_p95(run)
        print(f"{run['name']:18} {run['settings']} mean p95 {run['mean_p95']:.2f}", flush=True)
        if run["name"] not in best or run["mean_p95"] < best[run["name"]]["mean_p95"]:
            best[run["name"]] = run
    path.write_text(
        json.dumps(
            {
                n: {
                    "settings": r["settings"],
                    "mean_p95": r["mean_p95"],
                    "cost": r["cost"],
                    "feature": r["feature"],
                }
                for n, r in best.items()
            },
            indent=1,
        )
    )


def run_test(
    workers: int, *, dqn: bool, grid: str, feature: str = "all", only: Sequence[str] = ()
) -> None:
    """Test the tuned baselines (``dqn`` False; those in ``only`` when given) or train and
    test the DQN agents (every agent seed with each host feature asked for)."""
    tuned = json.loads((OUT / "tune.json").read_text()) if (OUT / "tune.json").exists() else {}
    specs: list[tuple[str, dict[str, Any], str]] = []
    if not dqn:
        # Untuned (class defaults) when the tuning did not finish (see the README).
        names = [n for n in BASELINES if not only or n in only]
        specs += [(n, dict(tuned[n]["settings"]) if n in tuned else {}, "") for n in names]
    # Not tuned when time was short (see the README): then the first setting.
    chosen = tuned["dqn"]["settings"] if "dqn" in tuned else DQN_SETTINGS[0]
    for seed in AGENT_SEEDS if dqn else ():
        settings = dict(chosen)
        settings["agent_seed"] = seed
        if feature in {"all", "url"}:
            specs.append((f"dqn-url-{seed}", dict(settings), "url"))
        if feature in {"all", "hostid"}:
            specs.append((f"dqn-hostid-{seed}", dict(settings), "hostid"))
    scenarios = scenarios_for_testing(grid)
    with ProcessPoolExecutor(workers) as pool:
        for run in pool.map(evaluate, specs, itertools.repeat(scenarios)):
            path = OUT / f"test-{grid}-{run['name']}.json"
            path.write_text(json.dumps(run))
            print(f"{run['name']:18} mean p95 {mean_p95(run):.2f} {run['cost']}", flush=True)


def paired(
    a: dict[str, dict[str, float]],
    b: dict[str, dict[str, float]],
    keys: list[str],
    metric: str = "p95",
) -> tuple[float, float, float]:
    """Mean relative difference (a - b) / b over paired scenarios, and its 95 % interval."""
    diffs = np.array([(a[k][metric] - b[k][metric]) / max(1e-9, b[k][metric]) for k in keys])
    half = 1.96 * diffs.std(ddof=1) / math.sqrt(len(diffs))
    return float(diffs.mean()), float(diffs.mean() - half), float(diffs.mean() + half)


_METRICS = (
    "mean",
    "p95",
    "p99",
    "good_per_s",
    "wasted",
    "failed",
    "lost",
    "gap_violations",
    "decision_us",
)


def report(grid: str, *, agents: bool = True) -> None:
    """Tables over the scenarios of ``grid``, of every run that covers them all: per family,
    each policy's means, the best baseline, and every other policy, every agent and the worst
    agent per feature against it. ``agents`` False leaves the DQN out (the baselines over the
    whole grid when the agents' test was cut short)."""
    wanted = {key(s) for s in scenarios_for_testing(grid)}
    runs: dict[str, dict[str, Any]] = {}
    # Agents whose test was cut short (partial-*.json) count with the scenarios every agent
    # finished; a finished test (test-*.json) replaces its partial file.
    for path in [*sorted(OUT.glob("partial-*.json")), *sorted(OUT.glob("test-*.json"))]:
        run = json.loads(path.read_text())
        name = run["name"]
        # An agent tested on several grids: its run that covers most of this grid.
        if (
            agents
            and name.startswith("dqn")
            and (
                name not in runs
                or len(wanted & run["results"].keys()) >= len(wanted & runs[name]["results"].keys())
            )
        ):
            runs[name] = run
    for run in runs.values():
        wanted &= run["results"].keys()
    for path in sorted(OUT.glob("test-*.json")):
        run = json.loads(path.read_text())
        if not run["name"].startswith("dqn") and wanted <= run["results"].keys():
            runs[run["name"]] = run
    out: dict[str, Any] = {"grid": grid, "families": {}}
    for family in FAMILIES:
        keys = sorted(k for k in wanted if k.startswith(family + "/"))
        table = {
            name: {m: float(np.mean([run["results"][k][m] for k in keys])) for m in _METRICS}
            for name, run in sorted(runs.items())
        }
        baselines = [n for n in table if not n.startswith("dqn")]
        best = min(baselines, key=lambda n: table[n]["p95"])
        vs: dict[str, Any] = {}
        for name in table:
            if name != best:
                vs[name] = paired(runs[name]["results"], runs[best]["results"], keys)
        for feature in ("url", "hostid"):
            agents = [n for n in table if n.startswith(f"dqn-{feature}-")]
            if agents:
                worst = max(agents, key=lambda n: vs[n][0])
                vs[f"worst dqn-{feature} ({worst})"] = vs[worst]
        out["families"][family] = {
            "scenarios": len(keys),
            "table": table,
            "best_baseline": best,
            "vs_best": vs,
        }
    out["costs"] = {n: r["cost"] for n, r in runs.items() if r["cost"]}
    name = grid if agents else f"{grid}-baselines"
    (OUT / f"report-{name}.json").write_text(json.dumps(out, indent=1))
    (OUT / f"report-{name}.md").write_text(markdown(out))
    print(markdown(out))


def markdown(out: dict[str, Any]) -> str:
    """The report's tables, for the README."""
    lines = []
    for family, data in out["families"].items():
        held = " (held out of training and tuning)" if family in HELD_OUT else ""
        lines += [
            f"#### {family}{held}: {data['scenarios']} paired scenarios",
            "",
            "| policy | mean s | p95 s | p99 s | good pages/s | wasted (403/429) | failed | "
            "lost | gap violations | decision us |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for name, m in sorted(data["table"].items(), key=lambda kv: kv[1]["p95"]):
            lines.append(
                f"| {name} | {m['mean']:.2f} | {m['p95']:.2f} | {m['p99']:.2f} | "
                f"{m['good_per_s']:.2f} | {m['wasted']:.0f} | {m['failed']:.1f} | "
                f"{m['lost']:.1f} | {m['gap_violations']:.0f} | {m['decision_us']:.0f} |"
            )
        lines += [
            "",
            f"Best baseline: {data['best_baseline']}. p95 against it "
            "(mean paired relative difference, 95 % interval):",
            "",
        ]
        for name, (mean, low, high) in sorted(data["vs_best"].items()):
            lines.append(f"- {name}: {100 * mean:+.1f} % [{100 * low:+.1f}, {100 * high:+.1f}]")
        lines.append("")
    if out["costs"]:
        lines += ["Training cost:", ""]
    for name, cost in sorted(out["costs"].items()):
        lines.append(
            f"- {name}: {cost['seconds']:.0f} s wall, {cost['episodes']} episodes, "
            f"{cost['decisions']} decisions, {cost['learn_steps']} learning steps, "
            f"{cost['target_syncs']} target syncs"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("stage", choices=("tune", "test", "test-dqn", "report"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--which", choices=("all", "baselines", "dqn"), default="all")
    parser.add_argument("--feature", choices=("all", "url", "hostid"), default="all")
    parser.add_argument("--grid", choices=tuple(GRIDS), default="full")
    parser.add_argument("--only", default="", help="baselines to test, comma-separated")
    parser.add_argument("--without-dqn", action="store_true", help="report: baselines only")
    args = parser.parse_args()
    if args.stage == "tune":
        tune(args.workers, args.which, "url" if args.feature == "all" else args.feature)
    elif args.stage in {"test", "test-dqn"}:
        run_test(
            args.workers,
            dqn=args.stage == "test-dqn",
            grid=args.grid,
            feature=args.feature,
            only=[n for n in args.only.split(",") if n],
        )
    else:
        report(args.grid, agents=not args.without_dqn)


if __name__ == "__main__":
    main()
