"""The video system's leader lease on each store (SQLite, PostgreSQL): one holder at a time,
renewed by it, taken over once it expires, never by two nodes racing for it."""

from __future__ import annotations

import asyncio

from topicrawl.storage.videostore import VideoStore

SITE = "http://video.test/"


async def test_the_lease_has_one_holder_until_it_expires(store_url: str) -> None:
    async with VideoStore(store_url) as store:
        assert await store.lease(SITE) is None
        assert await store.take_lease(SITE, 0, 110.0, now=100.0)  # node 0 takes it
        assert not await store.take_lease(SITE, 1, 115.0, now=105.0)  # held: refused
        assert await store.take_lease(SITE, 0, 120.0, now=108.0)  # the holder renews
        assert await store.lease(SITE) == (0, 120.0)
        assert await store.take_lease(SITE, 1, 131.0, now=121.0)  # expired: node 1 takes it
        assert not await store.take_lease(SITE, 0, 132.0, now=122.0)  # the old one is refused
        assert await store.lease(SITE) == (1, 131.0)
        assert await store.last_rounds(SITE) == {}  # the lease is no node's round
        # Two nodes racing for an expired lease: exactly one wins.
        won = await asyncio.gather(
            *(store.take_lease(SITE, node, 150.0, now=140.0) for node in (2, 3))
        )
        assert sorted(won) == [False, True]
        holder, _ = await store.lease(SITE) or (None, None)
        assert holder == (2 if won[0] else 3)
        assert await store.lease("http://other.test/") is None
