"""A DQN that picks the node for a host's next fetch: one assignment policy among the others.

State: for each of ``max_nodes`` node slots (a node keeps its slot while it lives), whether a
node is there, its queue per unit of concurrency, processing latency, CPU use, memory and
throughput (from the heartbeats, normalised and clipped), then the host's feature (the URL
VAE's code of its URLs, or a plain host-id code, or nothing). Action: the slot of the node
that gets the fetch; slots without a live node are masked out.

Reward of one fetch, with ``t`` its processing latency (dispatch to answer) and ``eps`` the
latency threshold: ``-max(0, t - eps) / eps``, minus ``refusal_penalty`` when the answer was a
refusal (403, 429) or the fetch was lost on a node that died. The seed's ``log(t - eps)`` is
undefined for ``t <= eps`` and grows with latency (a reward that rewards slowness); this
penalty is 0 under the threshold and falls linearly above it.

Learning: an online and a target network (same MLP), a replay memory of
``(s, a, r, s', mask')`` where ``s'`` is the state at the answer (node view then, same host),
epsilon-greedy exploration decaying linearly, Huber loss on ``r + gamma * max_a' Q_target(s',
a')`` over the live actions of ``s'``, the target synced every ``sync_every`` learning steps.
"""

from __future__ import annotations

import math
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import xxhash

from topicrawl.core.errors import ConfigError
from topicrawl.distributed.partition import NodeLoad
from topicrawl.learn._torch import load_saved, require_torch

require_torch()  # a clear error when the learn extra is missing, before the imports below

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402 - torch's own convention

__all__ = [
    "NODE_FEATURES",
    "DqnAgent",
    "DqnConfig",
    "DqnPolicy",
    "QNetwork",
    "ReplayMemory",
    "hostid_feature",
    "load_dqn_policy",
    "save_dqn_policy",
    "td_targets",
]

NODE_FEATURES = 6  # present, queue, latency, cpu, memory, throughput
HostFeature = Callable[[str], np.ndarray]


@dataclass(frozen=True, slots=True, kw_only=True)
class DqnConfig:
    """The agent's knobs."""

    max_nodes: int = 4
    feature_dim: int = 16
    hidden: int = 64
    gamma: float = 0.5
    learning_rate: float = 1e-3
    batch_size: int = 64
    replay: int = 20_000
    sync_every: int = 200
    train_every: int = 4
    epsilon_start: float = 1.0
    epsilon_end: float = 0.05
    epsilon_steps: int = 20_000
    threshold: float = 1.0  # eps of the reward, seconds
    refusal_penalty: float = 1.0

    def __post_init__(self) -> None:
        if not (1 <= self.max_nodes <= 256 and 0 <= self.feature_dim <= 1024):
            raise ConfigError("max_nodes must be in [1, 256] and feature_dim in [0, 1024]")
        if not (0 <= self.gamma < 1 and self.threshold > 0 and self.sync_every >= 1):
            raise ConfigError("gamma in [0, 1), threshold > 0 and sync_every >= 1")
        if not (self.batch_size >= 1 and self.replay >= self.batch_size):
            raise ConfigError("batch_size >= 1 and replay >= batch_size")

    @property
    def state_dim(self) -> int:
        return self.max_nodes * NODE_FEATURES + self.feature_dim


class QNetwork(nn.Module):
    """A two-layer MLP from a state to one value per node slot."""

    def __init__(self, state_dim: int, actions: int, hidden: int = 64) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(state_dim, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, actions),
        )

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        values: torch.Tensor = self.layers(state)
        return values


class ReplayMemory:
    """A ring buffer of ``(s, a, r, s', mask')`` transitions, sampled uniformly."""

    def __init__(self, capacity: int, state_dim: int, actions: int) -> None:
        self.capacity = capacity
        self.states = np.zeros((capacity, state_dim), dtype=np.float32)
        self.actions = np.zeros(capacity, dtype=np.int64)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.next_states = np.zeros((capacity, state_dim), dtype=np.float32)
        self.next_masks = np.zeros((capacity, actions), dtype=bool)
        self.size = 0
        self._at = 0

    def __len__(self) -> int:
        return self.size

    def push(
        self,
        state: np.ndarray,
        action: int,
        reward: float,
        next_state: np.ndarray,
        mask: np.ndarray,
    ) -> None:
        """Store a transition (the oldest is overwritten when full)."""
        i = self._at
        self.states[i], self.actions[i], self.rewards[i] = state, action, reward
        self.next_states[i], self.next_masks[i] = next_state, mask
        self._at = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, count: int, rng: np.random.Generator) -> tuple[torch.Tensor, ...]:
        """``count`` transitions as tensors (states, actions, rewards, next states, masks)."""
        picks = rng.integers(0, self.size, size=count)
        return (
            torch.from_numpy(self.states[picks]),
            torch.from_numpy(self.actions[picks]),
            torch.from_numpy(self.rewards[picks]),
            torch.from_numpy(self.next_states[picks]),
            torch.from_numpy(self.next_masks[picks]),
        )


def td_targets(
    rewards: torch.Tensor, next_values: torch.Tensor, next_masks: torch.Tensor, gamma: float
) -> torch.Tensor:
    """``r + gamma * max over the live actions of s' of Q_target(s', a')`` (just ``r`` when
    ``s'`` has no live action)."""
    masked = next_values.masked_fill(~next_masks, -math.inf)
    best = masked.max(dim=1).values
    best = torch.where(next_masks.any(dim=1), best, torch.zeros_like(best))
    return rewards + gamma * best


class DqnAgent:
    """Online and target networks, replay memory, epsilon-greedy (see the module docstring)."""

    def __init__(self, config: DqnConfig, *, seed: int = 0) -> None:
        self.config = config
        torch.manual_seed(seed)
        self.rng = np.random.default_rng(seed)
        dim, actions = config.state_dim, config.max_nodes
        self.online = QNetwork(dim, actions, config.hidden)
        self.target = QNetwork(dim, actions, config.hidden)
        self.sync_target()
        self.optimiser = torch.optim.Adam(self.online.parameters(), lr=config.learning_rate)
        self.memory = ReplayMemory(config.replay, dim, actions)
        # numpy views of the online weights (they share memory, so they follow every update):
        # one decision costs a few microseconds instead of a torch call's overhead.
        self._layers = [
            (layer.weight.detach().numpy(), layer.bias.detach().numpy())
            for layer in self.online.layers
            if isinstance(layer, nn.Linear)
        ]
        self.decisions = 0
        self.steps = 0  # learning steps
        self.syncs = 0

    @property
    def epsilon(self) -> float:
        c = self.config
        done = min(1.0, self.decisions / max(1, c.epsilon_steps))
        return c.epsilon_start + (c.epsilon_end - c.epsilon_start) * done

    def sync_target(self) -> None:
        """Copy the online network's weights into the target network."""
        self.target.load_state_dict(self.online.state_dict())
        self.syncs = getattr(self, "syncs", 0) + 1

    def act(self, state: np.ndarray, mask: np.ndarray, *, explore: bool) -> int:
        """The action for ``state``: random among the live ones with chance epsilon when
        exploring, else the live one of highest value."""
        live = np.flatnonzero(mask)
        if len(live) == 0:
            raise ValueError("no live action")
        if explore:
            self.decisions += 1
            if self.rng.random() < self.epsilon:
                return int(self.rng.choice(live))
        values = np.where(mask, self.values(state), -np.inf)
        return int(np.argmax(values))

    def values(self, state: np.ndarray) -> np.ndarray:
        """The online network's values of one state (computed in numpy)."""
        h = state
        last = len(self._layers) - 1
        for i, (weight, bias) in enumerate(self._layers):
            h = weight @ h + bias
            if i < last:
                h = np.maximum(h, 0.0)
        return h

    def learn_step(self) -> float | None:
        """One gradient step on a sampled batch; the target is synced every ``sync_every``
        steps. None while the memory holds less than a batch."""
        c = self.config
        if len(self.memory) < c.batch_size:
            return None
        states, actions, rewards, next_states, masks = self.memory.sample(c.batch_size, self.rng)
        with torch.no_grad():
            targets = td_targets(rewards, self.target(next_states), masks, c.gamma)
        values = self.online(states).gather(1, actions.unsqueeze(1)).squeeze(1)
        loss = F.smooth_l1_loss(values, targets)
        self.optimiser.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]
        nn.utils.clip_grad_norm_(self.online.parameters(), 10.0)
        self.optimiser.step()
        self.steps += 1
        if self.steps % c.sync_every == 0:
            self.sync_target()
        return float(loss.item())


def hostid_feature(dim: int) -> HostFeature:
    """A plain host-id feature: a fixed random Gaussian code per host name (what a model
    knows of a host from its name alone, with no shared structure between hosts)."""

    def code(host: str) -> np.ndarray:
        rng = np.random.default_rng(xxhash.xxh64_intdigest(host.encode("utf-8", "replace")))
        return rng.standard_normal(dim).astype(np.float32)

    return code


class DqnPolicy:
    """The DQN as an assignment policy (and a feedback policy while it trains).

    Args:
        agent: the agent (trained or not).
        host_feature: a host's feature, of ``agent.config.feature_dim`` values.
        training: explore and learn from :meth:`observe`; otherwise answer greedily.
    """

    name = "dqn"

    def __init__(
        self, agent: DqnAgent, host_feature: HostFeature | None = None, *, training: bool = False
    ) -> None:
        self.agent = agent
        self.config = agent.config
        self.training = training
        self._feature = host_feature
        self._features: dict[str, np.ndarray] = {}
        self._slots: dict[str, int] = {}
        self._pending: defaultdict[tuple[str, str], deque[tuple[np.ndarray, int]]] = defaultdict(
            deque
        )
        self._view: tuple[NodeLoad, ...] = ()
        self._observed = 0

    def slot_of(self, nodes: Sequence[NodeLoad]) -> dict[str, int]:
        """Each live node's slot; a node keeps its slot while it lives, a new one takes the
        first free slot (nodes past ``max_nodes`` get none and are never chosen)."""
        live = {n.node for n in nodes}
        for node in [n for n in self._slots if n not in live]:
            del self._slots[node]
        taken = set(self._slots.values())
        for node in sorted(live - set(self._slots)):
            free = next((i for i in range(self.config.max_nodes) if i not in taken), None)
            if free is None:
                break
            self._slots[node] = free
            taken.add(free)
        return dict(self._slots)

    def host_code(self, host: str) -> np.ndarray:
        """The host's feature (cached, at most 100,000 hosts)."""
        dim = self.config.feature_dim
        if dim == 0 or self._feature is None:
            return np.zeros(dim, dtype=np.float32)
        if host not in self._features:
            if len(self._features) > 100_000:
                self._features.clear()
            code = np.asarray(self._feature(host), dtype=np.float32).reshape(-1)
            if code.shape != (dim,):
                raise ValueError(f"host feature has {code.shape[0]} values, expected {dim}")
            self._features[host] = code
        return self._features[host]

    def state(self, host: str, nodes: Sequence[NodeLoad]) -> tuple[np.ndarray, np.ndarray]:
        """The state vector and the mask of live actions."""
        c = self.config
        slots = self.slot_of(nodes)
        values = [0.0] * (c.max_nodes * NODE_FEATURES)
        mask = np.zeros(c.max_nodes, dtype=bool)
        for n in nodes:
            i = slots.get(n.node)
            if i is None:
                continue
            mask[i] = True
            concurrency = max(1, n.concurrency)
            waiting = n.queue if n.queue is not None else n.hosts
            latency = n.latency if n.latency is not None else 0.0
            values[i * NODE_FEATURES : (i + 1) * NODE_FEATURES] = (
                1.0,
                min(waiting / concurrency, 20.0) / 5.0,
                min(latency / c.threshold, 20.0) / 5.0,
                min((n.cpu_percent or 0.0) / 100.0, 4.0),
                min((n.memory_bytes or 0) / 1e9, 4.0),
                min((n.pages_per_second or 0.0) / concurrency, 20.0) / 5.0,
            )
        block = np.array(values, dtype=np.float32)
        return np.concatenate([block, self.host_code(host)]), mask

    def reward(self, latency: float, status: int) -> float:
        """The fetch's reward (see the module docstring)."""
        c = self.config
        r = -max(0.0, latency - c.threshold) / c.threshold
        if status in {0, 403, 429}:
            r -= c.refusal_penalty
        return r

    def owner(self, host: str, nodes: Sequence[NodeLoad]) -> str | None:
        if not nodes:
            return None
        self._view = tuple(nodes)
        state, mask = self.state(host, nodes)
        if not mask.any():
            return min(n.node for n in nodes)
        action = self.agent.act(state, mask, explore=self.training)
        node = next(n for n, i in self._slots.items() if i == action)
        if self.training:
            self._pending[host, node].append((state, action))
        return node

    def observe(self, host: str, node: str, *, latency: float, status: int) -> None:
        if not self.training:
            return
        pending = self._pending.get((host, node))
        if not pending:
            return
        state, action = pending.popleft()
        if not pending:
            del self._pending[host, node]
        next_state, mask = self.state(host, self._view)
        self.agent.memory.push(state, action, self.reward(latency, status), next_state, mask)
        self._observed += 1
        if self._observed % self.config.train_every == 0:
            self.agent.learn_step()


def save_dqn_policy(
    policy: DqnPolicy, path: Path, *, feature: str, extra: dict[str, Any] | None = None
) -> None:
    """Write the online network and its config; ``feature`` names the host feature used
    (``none``, ``hostid`` or ``url``, whose URL model's weights go in ``extra``)."""
    torch.save(
        {
            "kind": "topicrawl-dqn",
            "config": asdict(policy.config),
            "state": policy.agent.online.state_dict(),
            "feature": feature,
            **(extra or {}),
        },
        path,
    )


def load_dqn_policy(path: Path) -> DqnPolicy:
    """A greedy DQN policy from a saved file.

    A ``url`` feature is computed by the saved URL model from ``https://<host>/`` (a worker
    only knows the host when it assigns it). Partial: a worker's heartbeats carry CPU, memory
    and throughput but not yet the queue or the processing latency the simulator trains on,
    so in a worker the state's queue is the node's host count and its latency 0.

    Raises:
        ConfigError: the file is missing or not a saved DQN.
    """
    saved = load_saved(path, "topicrawl-dqn", "DQN model")
    config = DqnConfig(**saved["config"])
    agent = DqnAgent(config)
    agent.online.load_state_dict(saved["state"])
    agent.sync_target()
    feature: HostFeature | None = None
    if saved.get("feature") == "hostid":
        feature = hostid_feature(config.feature_dim)
    elif saved.get("feature") == "url":
        from topicrawl.learn.urlvae import UrlVAE, VaeConfig, url_features  # noqa: PLC0415

        vae = UrlVAE(VaeConfig(**saved["url_config"]))
        vae.load_state_dict(saved["url_state"])
        vae.eval()

        def feature(host: str) -> np.ndarray:
            code: np.ndarray = url_features(vae, [f"https://{host}/"])[0]
            return code

    return DqnPolicy(agent, feature, training=False)
