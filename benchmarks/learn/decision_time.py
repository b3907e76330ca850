"""How long one DQN decision takes (state built from four nodes' views, greedy answer).

PYTHONPATH=src .venv/bin/python benchmarks/learn/decision_time.py
"""

from __future__ import annotations

import time

import numpy as np

from topicrawl.distributed.partition import NodeLoad
from topicrawl.learn.dqn import DqnAgent, DqnConfig, DqnPolicy, hostid_feature


def main(rounds: int = 2000) -> None:
    policy = DqnPolicy(DqnAgent(DqnConfig(feature_dim=16)), hostid_feature(16))
    nodes = [
        NodeLoad(
            node=f"n{i}",
            pages_per_second=3.0,
            queue=4,
            latency=0.3,
            cpu_percent=50.0,
            memory_bytes=10**8,
            concurrency=4,
        )
        for i in range(4)
    ]
    hosts = [f"h{i}.org" for i in range(100)]
    for host in hosts:
        policy.owner(host, nodes)  # the host codes cached, as in a running crawl
    started = time.perf_counter()
    for i in range(rounds):
        policy.owner(hosts[i % 100], nodes)
    decision = (time.perf_counter() - started) / rounds
    state = policy.state(hosts[0], nodes)[0]
    started = time.perf_counter()
    for _ in range(rounds):
        policy.agent.values(state)
    forward = (time.perf_counter() - started) / rounds
    print(f"decision {1e6 * decision:.0f} us, network forward {1e6 * forward:.0f} us")
    assert np.isfinite(policy.agent.values(state)).all()


if __name__ == "__main__":
    main()
