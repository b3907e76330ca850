"""Links a strategy held back before the crawl restarted, brought back from the stored pages.

A strategy that holds links back (the focused one keeps the links under its threshold in
memory and offers the best when the frontier runs dry) loses them when its process ends: a
resumed crawl, killed or stopped before, ran dry and ended short of its page budget with
links of its stored pages never fetched (issue #26: a focused crawl of the demo web killed
at 35 pages ended at 67 of its 90 after the resume; the crawl never killed reached 90).

The pages those links came from are stored with their links. So when a resumed crawl runs
dry and the strategy offers nothing more, the links of the pages stored before this run that
the frontier has never seen are queued, those of the most relevant pages first (a page's
stored relevance is what its links inherit), a batch at a time like the strategy's own
held-back links. The crawl's admission checks them like any request.
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Callable, Sequence

from topicrawl.core.models import Request
from topicrawl.core.protocols import Frontier, KnownUrls, Storage

__all__ = ["HeldBackLinks"]

_KNOWN_BATCH = 4096


class HeldBackLinks:
    """The links of pages stored before ``before`` the frontier never saw, best parent first.

    Read from storage once, on the first :meth:`take`; at most ``capacity`` are kept (those
    of the most relevant pages).

    Args:
        storage: the crawl's storage.
        frontier: the crawl's frontier (which URLs it has seen).
        before: pages fetched before this time (the start of this run) are read.
        follow_nofollow: whether rel=nofollow links count.
        capacity: links kept at most.
    """

    def __init__(
        self,
        *,
        storage: Storage,
        frontier: Frontier,
        before: float,
        follow_nofollow: bool = False,
        capacity: int = 100_000,
    ) -> None:
        self._storage = storage
        self._frontier = frontier
        self._before = before
        self._follow_nofollow = follow_nofollow
        self._capacity = capacity
        self._lock = asyncio.Lock()
        self._links: list[Request] | None = None  # best last, so taking is a pop

    async def take(self, count: int) -> list[Request]:
        """Up to ``count`` links, best first, each handed out once."""
        async with self._lock:
            if self._links is None:
                self._links = await self._read()
            links = self._links
            taken = links[-count:] if count > 0 else []
            del links[len(links) - len(taken) :]
            taken.reverse()
            return taken

    async def _read(self) -> list[Request]:
        # Links the frontier has seen are dropped a batch at a time as the pages are read,
        # so memory holds only the unseen ones (most links of a crawl are seen).
        best: dict[str, Request] = {}
        batch: dict[str, Request] = {}
        async for page in self._storage.iter_pages(with_links=True):
            if page.fetched_at >= self._before or not page.links:
                continue
            score = page.relevance if page.relevance is not None else 0.0
            for link in page.links:
                if link.nofollow and not self._follow_nofollow:
                    continue
                held = best.get(link.url) or batch.get(link.url)
                if held is None or held.score < score:
                    batch[link.url] = Request(
                        url=link.url,
                        score=score,
                        depth=page.depth + 1,
                        parent_url=page.url,
                        anchor=link.anchor,
                    )
            if len(batch) >= _KNOWN_BATCH:
                await self._keep_unseen(batch, best)
                batch = {}
        await self._keep_unseen(batch, best)
        kept = heapq.nlargest(self._capacity, best.values(), key=_score)
        kept.reverse()
        return kept

    async def _keep_unseen(self, batch: dict[str, Request], best: dict[str, Request]) -> None:
        urls = [url for url in batch if url not in best]
        seen = dict(zip(urls, await self._seen(urls), strict=True))
        for url, request in batch.items():
            if not seen.get(url, False):
                best[url] = request

    async def _seen(self, urls: Sequence[str]) -> list[bool]:
        known: Callable[[Sequence[str]], list[bool]] | None = (
            self._frontier.known if isinstance(self._frontier, KnownUrls) else None
        )
        seen: list[bool] = []
        for start in range(0, len(urls), _KNOWN_BATCH):
            chunk = urls[start : start + _KNOWN_BATCH]
            if known is not None:
                seen += known(chunk)
            else:
                seen += [await self._frontier.seen(url) for url in chunk]
            await asyncio.sleep(0)  # a long read leaves the event loop its turns
        return seen


def _score(request: Request) -> float:
    return request.score
