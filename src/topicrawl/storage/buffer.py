"""The in-memory write buffer: pages and failures saved but not yet committed.

It also answers content-hash lookups for pages that are buffered or being written, so a
duplicate is recognised before its original reaches the database.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from topicrawl.core.models import FetchFailure
from topicrawl.storage.rows import PendingPage

__all__ = ["WriteBuffer"]


class WriteBuffer:
    """Pages (one per URL, in save order) and failures waiting to be written.

    A taken batch keeps its content hashes visible until :meth:`committed` (or
    :meth:`restore`, which puts the batch back in front).
    """

    def __init__(self) -> None:
        self._pages: dict[str, PendingPage] = {}
        self._failures: list[tuple[FetchFailure, int]] = []
        # hash -> the URL that holds it, and how many uncommitted pages carry it.
        self._hash_holder: dict[str, str] = {}
        self._hash_refs: dict[str, int] = {}

    @property
    def page_count(self) -> int:
        return len(self._pages)

    @property
    def failure_count(self) -> int:
        return len(self._failures)

    def __bool__(self) -> bool:
        return bool(self._pages or self._failures)

    def add_page(self, entry: PendingPage) -> None:
        """Buffer a page; a buffered page with the same URL is replaced in its place, unless
        it is a newer fetch (the database keeps the newest fetch of a URL the same way)."""
        previous = self._pages.get(entry.page.url)
        if previous is not None:
            if previous.page.fetched_at > entry.page.fetched_at:
                return
            self._release(previous)
        self._pages[entry.page.url] = entry
        self._hold(entry)

    def add_failure(self, failure: FetchFailure, run_id: int) -> None:
        self._failures.append((failure, run_id))

    def take(self, size: int) -> tuple[list[PendingPage], list[tuple[FetchFailure, int]]]:
        """Remove and return up to ``size`` of the oldest pages and of the oldest failures."""
        taken = list(itertools.islice(self._pages.values(), size))
        for entry in taken:
            del self._pages[entry.page.url]
        taken_failures = self._failures[:size]
        del self._failures[:size]
        return taken, taken_failures

    def committed(self, taken: Sequence[PendingPage]) -> None:
        """A taken batch is in the database: stop answering for its hashes."""
        for entry in taken:
            self._release(entry)

    def restore(
        self, taken: Sequence[PendingPage], taken_failures: Sequence[tuple[FetchFailure, int]]
    ) -> None:
        """Put an unwritten batch back in front; a URL saved again since then keeps the newer."""
        restored: dict[str, PendingPage] = {}
        for entry in taken:
            if entry.page.url in self._pages:
                self._release(entry)
            else:
                restored[entry.page.url] = entry
        restored.update(self._pages)
        self._pages = restored
        self._failures[0:0] = taken_failures

    def hash_holder(self, content_hash: str) -> str | None:
        """The URL holding ``content_hash`` among uncommitted pages, if any.

        When that page says it duplicates another, the other URL is the holder.
        """
        return self._hash_holder.get(content_hash)

    def _hold(self, entry: PendingPage) -> None:
        content_hash = entry.page.content_hash
        if content_hash is None:
            return
        self._hash_refs[content_hash] = self._hash_refs.get(content_hash, 0) + 1
        self._hash_holder.setdefault(content_hash, entry.page.duplicate_of or entry.page.url)

    def _release(self, entry: PendingPage) -> None:
        content_hash = entry.page.content_hash
        if content_hash is None or content_hash not in self._hash_refs:
            return
        left = self._hash_refs[content_hash] - 1
        if left > 0:
            self._hash_refs[content_hash] = left
        else:
            del self._hash_refs[content_hash]
            self._hash_holder.pop(content_hash, None)
