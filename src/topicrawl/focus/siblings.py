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
            if block in blocks or len(blocks) >= _BLOCKS_PER_URL:
                continue
            if members is None:
                members = self._members[block] = {}
            if len(members) >= _MEMBERS_PER_BLOCK:
                continue
            blocks.append(block)
            members[url] = None

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

    def score(self, url: str) -> float:
        """The best yield of the blocks that list ``url``."""
        return max((self.block_yield(b) for b in self._blocks_of.get(url, ())), default=0.0)

    def members(self, block: BlockKey) -> list[str]:
        """The URLs ``block`` lists that are not crawled yet."""
        return list(self._members.get(block, ()))
