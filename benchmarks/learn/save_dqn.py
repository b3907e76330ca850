"""Train one DQN agent in the simulator (the tuned setting, agent seed 0, host-id feature: no
URL model file needed) and save it for ``topicrawl worker --assignment dqn
--assignment-model FILE``, for the real run (``real_run.py``).

    PYTHONPATH=src:benchmarks/learn .venv/bin/python benchmarks/learn/save_dqn.py out/dqn.pt
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench import train_dqn

from topicrawl.learn.dqn import DqnPolicy, save_dqn_policy

# The setting session 19's tuning chose for the DQN (results-s19/tune.json).
TUNED = {"threshold": 1.0, "gamma": 0.5}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    agent, cost = train_dqn(dict(TUNED), args.seed, "hostid")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_dqn_policy(DqnPolicy(agent), args.out, feature="hostid")
    print(json.dumps({"out": str(args.out), "cost": cost}))


if __name__ == "__main__":
    main()
