"""The video system's leader lease on each store (SQLite, PostgreSQL): one holder at a time,
renewed by it, taken over once it expires, never by two nodes racing for it; every term
logged; and a lease kept by schema 15 (a reserved row of ``node_rounds``) moved to its table
by migration 16."""

from __future__ import annotations

import asyncio

from sqlalchemy import text

from topicrawl.storage import MIGRATIONS
from topicrawl.storage.migrations import migrate
from topicrawl.storage.target import WRITE_OPTION, create_engine, parse_target
from topicrawl.storage.videostore import LeaderLease, LeaderTerm, VideoStore

SITE = "http://video.test/"


async def test_the_lease_has_one_holder_until_it_expires(store_url: str) -> None:
    async with VideoStore(store_url) as store:
        assert await store.lease(SITE) is None
        assert await store.take_lease(SITE, "a", 110.0, now=100.0)  # node a takes it
        assert not await store.take_lease(SITE, "b", 115.0, now=105.0)  # held: refused
        assert await store.take_lease(SITE, "a", 120.0, now=108.0)  # the holder renews
        assert await store.lease(SITE) == LeaderLease("a", 120.0, 1, 100.0, 108.0)
        assert await store.take_lease(SITE, "b", 131.0, now=121.0)  # expired: b takes it
        assert not await store.take_lease(SITE, "a", 132.0, now=122.0)  # the old one refused
        assert await store.lease(SITE) == LeaderLease("b", 131.0, 2, 121.0, 121.0)
        assert await store.last_rounds(SITE) == {}  # the lease is no node's round
        # Two nodes racing for an expired lease: exactly one wins.
        won = await asyncio.gather(
            *(store.take_lease(SITE, node, 150.0, now=140.0) for node in ("c", "d"))
        )
        assert sorted(won) == [False, True]
        lease = await store.lease(SITE)
        assert lease is not None
        winner = "c" if won[0] else "d"
        assert (lease.holder, lease.term) == (winner, 3)
        assert await store.lease_terms(SITE) == [
            LeaderTerm(1, "a", 100.0, None, None),
            LeaderTerm(2, "b", 121.0, "a", 120.0),
            LeaderTerm(3, winner, 140.0, "b", 131.0),
        ]
        assert await store.lease("http://other.test/") is None
        assert await store.lease_terms("http://other.test/") == []


async def test_the_first_take_is_raced_by_insert(store_url: str) -> None:
    async with VideoStore(store_url) as store:
        won = await asyncio.gather(
            *(store.take_lease(SITE, node, 50.0, now=10.0) for node in ("a", "b", "c"))
        )
        assert sorted(won) == [False, False, True]
        terms = await store.lease_terms(SITE)
        assert [t.term for t in terms] == [1]
        assert terms[0].holder == "abc"[won.index(True)]


async def test_migration_16_moves_a_lease_row_out_of_node_rounds(store_url: str) -> None:
    engine = create_engine(parse_target(store_url), busy_timeout=5.0, connect_timeout=5.0)
    target = parse_target(store_url)
    try:
        async with engine.execution_options(**{WRITE_OPTION: True}).begin() as connection:
            if target.schema is not None:
                await connection.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{target.schema}"'))
            assert await migrate(connection, MIGRATIONS[:15]) == list(range(1, 16))
            # What schema 15 kept: node b's rounds, and the lease held by node #1 until 500.
            rows = [(SITE, "b", 100.0, 7, 2.5), (SITE, "", 0.0, 1, 500.0)]
            rows.append(("http://other.test/", "", 0.0, 0, 90.0))
            for source, node, at, items, seconds in rows:
                await connection.execute(
                    text(
                        "INSERT INTO node_rounds (source, node, at, items, seconds) "
                        "VALUES (:source, :node, :at, :items, :seconds)"
                    ),
                    {"source": source, "node": node, "at": at, "items": items, "seconds": seconds},
                )
    finally:
        await engine.dispose()

    async with VideoStore(store_url) as store:  # migrates to 16
        assert await store.last_rounds(SITE) == {"b": (7, 2.5)}
        assert await store.lease(SITE) == LeaderLease("#1", 500.0, 1, None, None)
        assert await store.lease("http://other.test/") == LeaderLease("#0", 90.0, 1, None, None)
        assert await store.lease_terms(SITE) == [LeaderTerm(1, "#1", None, None, None)]
        # Honoured until it expires, then taken over as any other.
        assert not await store.take_lease(SITE, "b", 520.0, now=499.0)
        assert await store.take_lease(SITE, "b", 520.0, now=500.0)
        assert (await store.lease_terms(SITE))[-1] == LeaderTerm(2, "b", 500.0, "#1", 500.0)
        engine = store.engine
        async with engine.connect() as connection:
            left = await connection.execute(text("SELECT count(*) FROM node_rounds"))
            assert left.scalar_one() == 1  # only node b's round
