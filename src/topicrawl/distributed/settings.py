"""Settings of distributed mode: where Redis is, and the registry's and coordinator's timing.

Every field can be set by environment variable ``TOPICRAWL_DISTRIBUTED__<FIELD>`` (the same
name it would have as a ``distributed`` section of the crawl settings) or on the command line.
"""

from __future__ import annotations

from typing import Self

from pydantic import Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from topicrawl.core.config import DAY, HOUR
from topicrawl.core.errors import ConfigError

__all__ = ["DistributedSettings", "load_distributed"]


class DistributedSettings(BaseSettings):
    """How the workers of one distributed crawl find each other and watch each other.

    A worker heartbeats every 5 s and is declared dead after 15 s of silence; its leases go
    back and its hosts go to the live nodes at once. Whoever holds the coordinator lock (any
    worker, or a ``topicrawl coordinator``) does that; a lock whose holder died lapses after
    ``lock_ttl``, so the lock TTL may not exceed the heartbeat timeout: a coordinator killed
    together with a worker then delays the failover by at most ``lock_ttl`` more.
    """

    model_config = SettingsConfigDict(
        env_prefix="TOPICRAWL_DISTRIBUTED__", extra="forbid", frozen=True
    )

    redis_url: str = Field("redis://127.0.0.1:6379/0", description="Redis holding the crawl.")
    namespace: str = Field("default", description="The crawl's name; crawls can share a Redis.")
    heartbeat_interval: float = Field(5.0, gt=0, le=HOUR, description="Seconds between heartbeats.")
    heartbeat_timeout: float = Field(
        15.0, gt=0, le=DAY, description="A node silent this long (its heartbeat key's TTL) is dead."
    )
    lock_ttl: float = Field(
        5.0,
        gt=0,
        le=DAY,
        description="Seconds the coordinator lock lasts unless renewed (<= heartbeat_timeout).",
    )
    coordinator_interval: float = Field(
        0.0,
        ge=0,
        le=HOUR,
        description="Seconds between coordinator rounds; 0 means min(heartbeat, lock_ttl / 3).",
    )
    throughput_window: float = Field(
        60.0, gt=0, le=DAY, description="Seconds over which a node's pages per second are measured."
    )
    min_weight: float = Field(
        0.1, gt=0, le=1e6, description="Floor of a node's hashing weight (pages per second)."
    )
    steal_min: int = Field(
        2,
        ge=0,
        le=1_000_000,
        description="Ready hosts a node must have before an idle one takes one (0 off).",
    )
    share_hosts: bool = Field(
        True,
        description="An idle node pops from other nodes' ready hosts (one site, many workers).",
    )
    redis_retry_for: float = Field(
        60.0, ge=0, le=DAY, description="Seconds of Redis outage a worker rides out by retrying."
    )
    storage_retries: int = Field(
        8, ge=0, le=1000, description="Retries of a database write whose connection dropped."
    )
    stop_grace: float = Field(
        60.0,
        gt=0,
        le=DAY,
        description="Seconds a worker told to stop (SIGTERM, Ctrl-C) may take to finish its "
        "pages in flight; then it quits them (their leases go back), and ends at the latest "
        "after as long again.",
    )
    exact_dedupe: bool = Field(False, description="Exact URL set in Redis instead of Bloom.")
    assignment: str = Field(
        "success-table",
        description="Assignment policy of new hosts: success-table (default: two choices by"
        " expected delay from the heartbeats' queue and latency, among the nodes the host has"
        " not refused), rendezvous (throughput-weighted, the default before session 19),"
        " rendezvous-plain, hash, bounded, least-loaded, sed, two-choices, dqn. A worker tells"
        " its policy how each of its fetches went: under success-table a host that refuses the"
        " node (403, 429) is handed to another node; dqn answers from its model file without"
        " learning. What one node learns is not shared with the others"
        " (benchmarks/learn/README.md).",
    )
    assignment_model: str | None = Field(
        None, description="The trained model file of the dqn policy (benchmarks/learn)."
    )

    @model_validator(mode="after")
    def _timeout_after_interval(self) -> Self:
        from topicrawl.distributed.policies import POLICY_NAMES  # noqa: PLC0415 - no cycle

        if self.assignment not in POLICY_NAMES:
            raise ValueError(
                f"assignment {self.assignment!r} is not one of {', '.join(POLICY_NAMES)}"
            )
        if self.assignment == "dqn" and not self.assignment_model:
            raise ValueError("assignment dqn needs assignment_model (a trained model file)")
        if self.heartbeat_timeout <= self.heartbeat_interval:
            raise ValueError("heartbeat_timeout must be longer than heartbeat_interval")
        if self.lock_ttl > self.heartbeat_timeout:
            raise ValueError(
                f"lock_ttl ({self.lock_ttl:g} s) must not exceed heartbeat_timeout "
                f"({self.heartbeat_timeout:g} s): a coordinator that dies would hold back "
                "the failover of a dead worker for the whole lock TTL"
            )
        return self

    @property
    def round_interval(self) -> float:
        """Seconds between two coordinator rounds."""
        if self.coordinator_interval:
            return self.coordinator_interval
        return min(self.heartbeat_interval, self.lock_ttl / 3)


def load_distributed(**overrides: object) -> DistributedSettings:
    """Settings from the environment and explicit overrides (``None`` values are ignored).

    Raises:
        ConfigError: a value is invalid.
    """
    given = {key: value for key, value in overrides.items() if value is not None}
    try:
        return DistributedSettings(**given)  # type: ignore[arg-type]
    except ValidationError as exc:
        lines = ["invalid distributed settings:"]
        for error in exc.errors():
            where = ".".join(str(part) for part in error["loc"]) or "(root)"
            lines.append(f"  {where}: {error['msg']}")
        raise ConfigError("\n".join(lines)) from exc
