"""The video system's split jobs on each store (SQLite, PostgreSQL, schema 18): an item is
claimed by one node at a time, even by nodes racing for it; a claim renewed stays, one left
to end goes to another node; a done item keeps the result of the node that finished it
first; jobs are apart by source and name."""

from __future__ import annotations

import asyncio

from topicrawl.storage.videostore import VideoStore

SITE = "http://video.test/"
JOB = "crawl:1"


async def test_each_item_is_claimed_by_one_node_until_its_claim_ends(store_url: str) -> None:
    async with VideoStore(store_url) as store:
        assert await store.split_add(SITE, JOB, ["u1", "u2", "u3", "u2"]) == 3
        assert await store.split_add(SITE, JOB, ["u3", "u4"]) == 1  # u3 was there
        # Two nodes racing for the same items: each item goes to exactly one.
        got = await asyncio.gather(
            *(store.split_claim(SITE, JOB, n, 4, now=100.0, until=110.0) for n in ("a", "b"))
        )
        assert sorted(got[0] + got[1]) == ["u1", "u2", "u3", "u4"]
        assert await store.split_claim(SITE, JOB, "c", 4, now=105.0, until=115.0) == []
        # a renews its claims; b's end at 110 and go to c.
        assert await store.split_renew(SITE, JOB, "a", got[0], until=130.0) == len(got[0])
        taken = await store.split_claim(SITE, JOB, "c", 4, now=111.0, until=121.0)
        assert sorted(taken) == sorted(got[1])
        # b finishes late what c now holds: the first to finish keeps the item.
        await store.split_done(SITE, JOB, "b", dict.fromkeys(got[1], '"b"'))
        await store.split_done(SITE, JOB, "c", dict.fromkeys(got[1], '"c"'))
        await store.split_done(SITE, JOB, "a", dict.fromkeys(got[0], '"a"'))
        assert await store.split_left(SITE, JOB) == 0
        assert await store.split_results(SITE, JOB) == {
            **dict.fromkeys(got[0], '"a"'),
            **dict.fromkeys(got[1], '"b"'),
        }
        counts = {n: c for n, c in {"a": len(got[0]), "b": len(got[1])}.items() if c}
        assert await store.split_counts(SITE, "crawl") == counts
        assert await store.split_open_jobs(SITE) == []


async def test_jobs_are_apart_by_source_and_name(store_url: str) -> None:
    async with VideoStore(store_url) as store:
        await store.split_add(SITE, "posts:1", ["x"])
        await store.split_add("http://other.test/", "posts:1", ["x", "y"])
        await store.split_add(SITE, "follows:1:1", ["x"])
        assert await store.split_open_jobs(SITE) == ["follows:1:1", "posts:1"]
        assert await store.split_claim(SITE, "posts:1", "a", 5, now=1.0, until=9.0) == ["x"]
        assert await store.split_left("http://other.test/", "posts:1") == 2
        assert await store.split_left(SITE, "follows:1:1") == 1
