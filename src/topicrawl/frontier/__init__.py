"""The frontier: a max-priority queue of requests with per-host politeness, dedupe and leases.

- :class:`MemoryFrontier` keeps everything in memory (one process, one run).
- :class:`SqliteFrontier` keeps the queue in a SQLite file and resumes after a crash.
- :class:`SeenUrls` is the dedupe behind both: a Bloom filter in front of an exact store.
"""

from __future__ import annotations

from topicrawl.frontier.dedupe import ExactStore, FingerprintSet, SeenUrls
from topicrawl.frontier.memory import MemoryFrontier
from topicrawl.frontier.sqlite import SqliteFrontier

__all__ = ["ExactStore", "FingerprintSet", "MemoryFrontier", "SeenUrls", "SqliteFrontier"]
