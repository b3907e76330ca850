"""Stage 1 of the assignment benchmark: the URL VAE trained on the training seeds' URLs, every
seed's host features, and what z predicts on hosts it never saw.

    PYTHONPATH=src .venv/bin/python benchmarks/learn/features.py --out benchmarks/learn/out

Writes ``url-vae.pt``, ``features.npz`` (seed -> host x latent: the mean ``mu`` of the host's
URLs) and ``probe.json``: the KL of each latent dimension, and a logistic regression fitted on
the training seeds' hosts and scored on the test seeds' hosts (all unseen) predicting the
host's provider (its host group and URL shape are the provider's) and whether its provider
refuses some node (blocks or throttles it), from z against from a plain host-id code.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression
from world import PROVIDERS, make_world

from topicrawl.learn.dqn import hostid_feature
from topicrawl.learn.urlvae import (
    TrainReport,
    VaeConfig,
    load_url_vae,
    save_url_vae,
    train_url_vae,
    url_features,
)

TRAIN = range(10)
TUNE = range(100, 110)
TEST = range(1000, 1020)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    parser.add_argument("--train-urls", type=int, default=1500)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--latent", type=int, default=16)
    parser.add_argument("--urls-per-host", type=int, default=1)
    parser.add_argument("--reuse", action="store_true", help="load url-vae.pt, do not train")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    pool = [u for s in TRAIN for urls in make_world(s).urls for u in urls]
    sample = [pool[i] for i in rng.choice(len(pool), size=args.train_urls, replace=False)]
    if args.reuse:
        saved = torch.load(args.out / "url-vae.pt", weights_only=True)
        model = load_url_vae(args.out / "url-vae.pt")
        report = TrainReport(**saved["report"])
    else:
        model, report = train_url_vae(
            sample,
            config=VaeConfig(latent=args.latent),
            epochs=args.epochs,
            batch_size=32,
            on_epoch=lambda e, loss: print(f"epoch {e}: loss {loss:.2f}", flush=True),
        )
        save_url_vae(model, args.out / "url-vae.pt", report)
    print(f"trained in {report.seconds:.0f} s; collapsed {report.collapsed}", flush=True)
    started = time.perf_counter()
    features: dict[str, np.ndarray] = {}
    for seed in [*TRAIN, *TUNE, *TEST]:
        world = make_world(seed)
        flat = [u for urls in world.urls for u in urls[: args.urls_per_host]]
        codes = url_features(model, flat).reshape(len(world.hosts), -1, args.latent)
        features[str(seed)] = codes.mean(axis=1)
    np.savez(args.out / "features.npz", **features)
    encode_seconds = time.perf_counter() - started
    probe = {
        "train_urls": len(sample),
        "epochs": args.epochs,
        "train_seconds": report.seconds,
        "encode_seconds": encode_seconds,
        "loss": report.loss,
        "reconstruction": report.reconstruction,
        "kl": report.kl,
        "kl_per_dimension": report.kl_per_dimension,
        "collapsed": report.collapsed,
        "urls_per_host": args.urls_per_host,
        **probe_unseen(features, args.latent),
    }
    (args.out / "probe.json").write_text(json.dumps(probe, indent=1))
    print(json.dumps(probe, indent=1))


def probe_unseen(features: dict[str, np.ndarray], dim: int) -> dict[str, float]:
    """Accuracy on the test seeds' hosts of a logistic regression fitted on the training
    seeds' hosts, from z and from a host-id code, with the majority class as the floor."""
    code = hostid_feature(dim)

    def data(seeds: range, kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        xs, providers, refuses = [], [], []
        for seed in seeds:
            world = make_world(seed)
            if kind == "url":
                xs.append(features[str(seed)])
            else:
                xs.append(np.stack([code(h) for h in world.hosts]))
            providers.append(world.provider)
            refuses.append([max(PROVIDERS[p].refuse) > 0 for p in world.provider])
        return np.concatenate(xs), np.concatenate(providers), np.concatenate(refuses)

    out: dict[str, float] = {}
    for kind in ("url", "hostid"):
        x_train, p_train, r_train = data(TRAIN, kind)
        x_test, p_test, r_test = data(TEST, kind)
        for target, y_train, y_test in (
            ("provider", p_train, p_test),
            ("refuses_a_node", r_train, r_test),
        ):
            model = LogisticRegression(max_iter=2000).fit(x_train, y_train)
            out[f"{kind}_{target}_accuracy"] = float(model.score(x_test, y_test))
            majority = np.bincount(y_test.astype(int)).max() / len(y_test)
            out[f"majority_{target}_accuracy"] = float(majority)
    return out


if __name__ == "__main__":
    main()
