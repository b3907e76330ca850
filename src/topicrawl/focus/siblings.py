"""The yield of link blocks: how many of the pages a list links to turned out relevant, so
that the links of the same list still waiting can follow them.

A block of links (a list, a definition list, a table: see
:mod:`topicrawl.parse.html`) is a human-made grouping: a table of contents' section, a
command category, the classes of a package. Its anchors may not name the topic (``git
request-pull``, ``malloc.html``) while the pages they lead to are about it; once several of
them turned out relevant, the others are likely to be too. Nothing here names a site: a
block is known by its host and the text of its anchors, so the same list on several pages
(a sidebar) is one block.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["BlockKey", "BlockYield"]

BlockKey = tuple[str, int]
"""A link block: its host and the hash of its extended anchor text."""

_BLOCKS_PER_URL = 8  # the blocks remembered for one URL (the first that list it)
_MEMBERS_PER_BLOCK = 2_000  # the URLs remembered for one block


class BlockYield:
    """The crawled pages of each link block and how many were relevant, against the crawl's
    relevant share ``base``:

        yield = max(0, r - n * base) / (n + prior) / (1 - base)

    for a block of which ``n`` linked pages were crawled, ``r`` of them judged relevant: the
    block's relevant share above the crawl's, shrunk by ``prior`` pseudo-pages (one lucky page
    says little), in [0, 1] (0 while nothing is known). A URL's yield is the best of the
    blocks that list it. At most ``capacity`` URLs are remembered (past it, new ones are not).
    """

    def __init__(self, *, prior: float, capacity: int = 200_000) -> None:
        if prior <= 0.0 or capacity < 0:
            raise ValueError("prior must be > 0 and capacity >= 0")
        self._prior = prior
        self._capacity = capacity
        self._blocks_of: dict[str, list[BlockKey]] = {}
        self._members: dict[BlockKey, dict[str, None]] = {}
        self._tally: dict[BlockKey, tuple[int, int]] = {}  # relevant, crawled
        self._outside: set[str] = set()  # URLs some untracked context links to as well
        self._relevant = 0
        self._crawled = 0

    def __len__(self) -> int:
        return len(self._blocks_of)

    def listed(self, block: BlockKey, urls: Iterable[str]) -> None:
        """``block`` links to ``urls`` (not crawled yet)."""
        members = self._members.get(block)
        for url in urls:
            blocks = self._blocks_of.get(url)
            if blocks is None:
                if len(self._blocks_of) >= self._capacity:
                    continue
                blocks = self._blocks_of[url] = []
            if block in blocks:
                continue
            if members is None:
                members = self._members[block] = {}
            if len(blocks) >= _BLOCKS_PER_URL or len(members) >= _MEMBERS_PER_BLOCK:
                self._outside.add(url)  # a block not remembered says nothing against it
                continue
            blocks.append(block)
            members[url] = None

    def unlisted(self, urls: Iterable[str]) -> None:
        """``urls`` are linked from a context no block tracks (a single link, a block too long
        or without text): nothing learned of a block speaks against them."""
        for url in urls:
            if len(self._outside) < self._capacity:
                self._outside.add(url)

    def crawled(self, urls: Iterable[str], *, relevant: bool) -> list[BlockKey]:
        """A page was crawled (``urls``: its address and final address) and judged; returns
        the blocks that list it (their yields changed), and forgets it."""
        self._crawled += 1
        self._relevant += relevant
        blocks: dict[BlockKey, None] = {}
        for url in urls:
            for block in self._blocks_of.pop(url, ()):
                if block not in blocks:
                    blocks[block] = None
                    held = self._tally.get(block, (0, 0))
                    self._tally[block] = (held[0] + relevant, held[1] + 1)
                members = self._members.get(block)
                if members is not None:
                    members.pop(url, None)
            self._outside.discard(url)
        return list(blocks)

    def block_yield(self, block: BlockKey) -> float:
        """The yield of ``block`` (0 when none of its pages was crawled)."""
        held = self._tally.get(block)
        if held is None or not self._crawled:
            return 0.0
        relevant, crawled = held
        base = min(self._relevant / self._crawled, 0.99)
        lift = max(relevant - crawled * base, 0.0) / (crawled + self._prior)
        return min(lift / (1.0 - base), 1.0)

    def share(self, block: BlockKey, *, prior: float) -> float:
        """How much of their parents' credit the links of ``block`` keep: for ``n`` crawled
        pages of the block, ``r`` of them relevant, against the crawl's relevant share
        ``base``,

            share = min(1, (r + prior * base) / ((n + prior) * base))

        the block's share shrunk toward the crawl's by ``prior`` pseudo-pages, over the
        crawl's: 1 while the block does as well as the crawl (or nothing is known), then
        down toward 0 as its pages keep turning out off-topic (``r = 0``: ``prior / (n +
        prior)``, whatever the base)."""
        held = self._tally.get(block)
        if held is None or not self._relevant:
            return 1.0
        relevant, crawled = held
        base = self._relevant / self._crawled
        return min((relevant + prior * base) / ((crawled + prior) * base), 1.0)

    def share_of(self, url: str, *, prior: float) -> float:
        """The best :meth:`share` of the blocks that list ``url``; 1 if an untracked context
        links to it too, or no block is known for it."""
        blocks = self._blocks_of.get(url)
        if not blocks or url in self._outside:
            return 1.0
        return max(self.share(b, prior=prior) for b in blocks)

    def score(self, url: str) -> float:
        """The best yield of the blocks that list ``url``."""
        return max((self.block_yield(b) for b in self._blocks_of.get(url, ())), default=0.0)

    def members(self, block: BlockKey) -> list[str]:
        """The URLs ``block`` lists that are not crawled yet."""
        return list(self._members.get(block, ()))
