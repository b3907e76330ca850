"""Microblog accounts: matching per step, the LDA filter, and influence against the truth.

For each seed, a demo accounts world is generated around a fixed list of video entity names
(English and Chinese directors, actors and titles), served on loopback, and the whole
pipeline of ``topicrawl accounts run`` is run against it with its defaults
(:func:`topicrawl.engine.accounts.run_account_pipeline`). Measured against the world's own
truth:

- matching, per step: precision (matches of the step that are the named entity's own
  account) and recall (the entity's own accounts of the kind the step is for: exact names,
  names with an affix word, near names, found by any step);
- the LDA filter: precision and recall of the accounts it keeps among those it judged (all
  but the exact and affix matches, kept whatever their score), against "truly in the video
  domain"; and of the final kept set over the whole graph;
- influence: Spearman correlation with the generator's true influence over the graph's
  accounts, for the weighted PageRank, plain PageRank and follower counts.

Run: ``python benchmarks/revisit/microblog.py [--seeds 5] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from typing import Any

from scipy.stats import rankdata, spearmanr
from sklearn.metrics import roc_auc_score

from topicrawl.demoweb.accounts import AccountWorld
from topicrawl.demoweb.accountserver import AccountServer
from topicrawl.engine.accounts import AccountPipelineSettings, AccountRun, run_account_pipeline
from topicrawl.revisit.influence import plain_pagerank
from topicrawl.sources.accounts import MatchStep
from topicrawl.sources.accountsapi import AccountsClient
from topicrawl.text.tokenize import Tokenizer

NAMES = (
    "张艺谋",
    "巩俐",
    "陈凯歌",
    "周星驰",
    "章子怡",
    "流浪地球",
    "让子弹飞",
    "霸王别姬",
    "甄嬛传",
    "琅琊榜",
    "卧虎藏龙",
    "姜文",
    "Christopher Nolan",
    "Greta Gerwig",
    "Meryl Streep",
    "Denzel Washington",
    "Gong Li",
    "Inception",
    "Breaking Bad",
    "The Shawshank Redemption",
    "Parasite",
    "Succession",
    "Bong Joon-ho",
    "Cate Blanchett",
)
SWEEP = (0.1, 0.2, 0.3, 0.4, 0.5)
KIND_STEP = {"exact": MatchStep.EXACT, "affix": MatchStep.AFFIX, "near": MatchStep.FUZZY}


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


async def one_seed(
    seed: int, settings: AccountPipelineSettings, mix: tuple[float, float]
) -> dict[str, Any]:
    focus, spill = mix
    world = AccountWorld.generate(NAMES, seed=seed, fans=80, others=160, focus=focus, spill=spill)
    truth = world.true_matches()
    in_domain = world.in_domain()
    started = time.perf_counter()
    async with (
        AccountServer(world, rate_limit=1_000_000) as server,
        AccountsClient(server.base_url) as client,
    ):
        run = await run_account_pipeline(client, NAMES, settings)
        requests = client.requests
    seconds = time.perf_counter() - started
    out: dict[str, Any] = {"seed": seed, "accounts": len(world.accounts), "seconds": seconds}
    out["requests"] = requests
    # matching per step
    for step in MatchStep:
        matches = [m for m in run.matches if m.step is step]
        right = sum(1 for m in matches if truth.get(m.account.id, (None, ""))[0] == m.name)
        kinds = [k for k, s in KIND_STEP.items() if s is step]
        owned = [a for a, (_, kind) in truth.items() if kind in kinds]
        found = {
            m.account.id for m in run.matches if truth.get(m.account.id, (None, ""))[0] == m.name
        }
        out[f"match_{step.name.lower()}"] = {
            "matches": len(matches),
            "precision": _ratio(right, len(matches)),
            "true": len(owned),
            "recall": _ratio(sum(1 for a in owned if a in found), len(owned)),
        }
    fuzzy = [m for m in run.matches if m.step is MatchStep.FUZZY and run.scores[m.account.id].kept]
    fuzzy_right = sum(1 for m in fuzzy if truth.get(m.account.id, (None, ""))[0] == m.name)
    out["match_fuzzy"]["precision_after_lda"] = _ratio(fuzzy_right, len(fuzzy))
    # the LDA filter
    keep = {m.account.id for m in run.matches if m.step in settings.keep_steps}
    judged = [a for a in run.graph.accounts if a not in keep]
    kept = [a for a in judged if run.scores[a].kept]
    domain_judged = [a for a in judged if a in in_domain]
    out["lda_judged"] = {
        "accounts": len(judged),
        "in_domain": len(domain_judged),
        "kept": len(kept),
        "precision": _ratio(sum(1 for a in kept if a in in_domain), len(kept)),
        "recall": _ratio(sum(1 for a in kept if a in in_domain), len(domain_judged)),
    }
    for cut in SWEEP:
        chosen = [a for a in judged if run.scores[a].score >= cut]
        right = sum(1 for a in chosen if a in in_domain)
        out[f"lda_at_{cut}"] = {
            "precision": _ratio(right, len(chosen)),
            "recall": _ratio(right, len(domain_judged)),
        }
    # threshold-free: ROC AUC of the LDA score and of a plain keyword share (the fraction of
    # an account's words that are domain words or entity names) over the judged accounts
    labels = [a in in_domain for a in judged]
    if 0 < sum(labels) < len(labels):
        share = _keyword_share(run, settings, judged)
        lda = [run.scores[a].score for a in judged]
        shares = [share[a] for a in judged]
        # A fusion with nothing to tune (so nothing chosen on the data it is judged on): the
        # mean of an account's rank by the LDA score and by the keyword share.
        fused = (rankdata(lda) + rankdata(shares)) / 2
        out["auc"] = {
            "lda": float(roc_auc_score(labels, lda)),
            "keyword_share": float(roc_auc_score(labels, shares)),
            "rank_mean": float(roc_auc_score(labels, fused)),
        }
    final = [a for a in run.graph.accounts if run.scores[a].kept]
    graph_domain = [a for a in run.graph.accounts if a in in_domain]
    out["kept_final"] = {
        "accounts": len(run.graph.accounts),
        "kept": len(final),
        "precision": _ratio(sum(1 for a in final if a in in_domain), len(final)),
        "recall": _ratio(sum(1 for a in final if a in in_domain), len(graph_domain)),
    }
    # influence
    ids = sorted(run.graph.accounts)
    true = [world.accounts[a].influence for a in ids]
    plain = plain_pagerank(ids, run.graph.edges)
    candidates = {
        "weighted_pagerank": [run.influence[a] for a in ids],
        "plain_pagerank": [plain[a] for a in ids],
        "followers": [float(run.graph.accounts[a].followers) for a in ids],
    }
    out["spearman"] = {
        name: float(spearmanr(values, true).statistic) for name, values in candidates.items()
    }
    kept_ids = [a for a in ids if run.scores[a].kept]
    true_kept = [world.accounts[a].influence for a in kept_ids]
    out["spearman_kept"] = {
        "weighted_pagerank": float(
            spearmanr([run.influence[a] for a in kept_ids], true_kept).statistic
        ),
        "plain_pagerank": float(spearmanr([plain[a] for a in kept_ids], true_kept).statistic),
        "followers": float(
            spearmanr([run.graph.accounts[a].followers for a in kept_ids], true_kept).statistic
        ),
    }
    return out


def _keyword_share(
    run: AccountRun, settings: AccountPipelineSettings, ids: list[str]
) -> dict[str, float]:
    words = [*settings.domain_words, *NAMES]
    tokenizer = Tokenizer(user_words=words)
    domain = {t for w in words for t in tokenizer.tokens(w)}
    texts: dict[str, list[str]] = {}
    for post in run.posts:
        texts.setdefault(post.account_id, []).append(post.text)
    share = {}
    for account in ids:
        tokens = tokenizer.tokens("\n".join(texts.get(account, [])))
        share[account] = sum(t in domain for t in tokens) / len(tokens) if tokens else 0.0
    return share


def _mean(rows: list[dict[str, Any]], *path: str) -> str:
    values = []
    for row in rows:
        value: Any = row
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if value is not None:
            values.append(float(value))
    if not values:
        return "n/a"
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{statistics.mean(values):.3f} (sd {statistics.stdev(values):.3f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--json", help="write every seed's numbers here")
    parser.add_argument(
        "--focus", type=float, default=0.75, help="share of a video account's posts on video"
    )
    parser.add_argument(
        "--spill", type=float, default=0.1, help="share of another account's posts on video"
    )
    args = parser.parse_args(argv)
    settings = AccountPipelineSettings()
    mix = (args.focus, args.spill)
    rows = [asyncio.run(one_seed(seed, settings, mix)) for seed in range(1, args.seeds + 1)]
    for row in rows:
        print(json.dumps(row, ensure_ascii=False))
    print(
        f"\n{len(NAMES)} names, {args.seeds} seeds, focus {args.focus}, spill {args.spill}, "
        "pipeline defaults; mean (sd):"
    )
    for step in ("exact", "affix", "fuzzy"):
        print(
            f"  match {step:5}: precision {_mean(rows, f'match_{step}', 'precision')}, "
            f"recall {_mean(rows, f'match_{step}', 'recall')}"
        )
    after = _mean(rows, "match_fuzzy", "precision_after_lda")
    print(f"  fuzzy matches the LDA filter kept: precision {after}")
    print(
        f"  LDA filter (judged accounts): precision {_mean(rows, 'lda_judged', 'precision')}, "
        f"recall {_mean(rows, 'lda_judged', 'recall')}"
    )
    for cut in SWEEP:
        print(
            f"    threshold {cut}: precision {_mean(rows, f'lda_at_{cut}', 'precision')}, "
            f"recall {_mean(rows, f'lda_at_{cut}', 'recall')}"
        )
    print(
        f"  ROC AUC over the judged accounts: LDA {_mean(rows, 'auc', 'lda')}, "
        f"keyword share {_mean(rows, 'auc', 'keyword_share')}, mean of both ranks "
        f"{_mean(rows, 'auc', 'rank_mean')}; LDA ahead of the keyword share in "
        f"{sum(r['auc']['lda'] > r['auc']['keyword_share'] for r in rows if 'auc' in r)} of "
        f"{sum('auc' in r for r in rows)} seeds"
    )
    print(
        f"  kept set (whole graph): precision {_mean(rows, 'kept_final', 'precision')}, "
        f"recall {_mean(rows, 'kept_final', 'recall')}"
    )
    for scope in ("spearman", "spearman_kept"):
        for name in ("weighted_pagerank", "plain_pagerank", "followers"):
            print(f"  {scope:13} {name:17}: {_mean(rows, scope, name)}")
    print(f"  seconds per run: {_mean(rows, 'seconds')}; requests: {_mean(rows, 'requests')}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, ensure_ascii=False, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
