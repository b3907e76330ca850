"""The video system's first crawl and account fetches split between its live nodes.

A job is a set of items in the shared database (``split_items``, schema 18): the first crawl's
URLs (``crawl:<run id>``), the accounts whose following lists one hop of the follow graph
reads (``follows:<account run>:<hop>``), the accounts whose posts the LDA filter reads
(``posts:<account run>``). Every node claims a few open items at a time
(:meth:`~topicrawl.storage.videostore.VideoStore.split_claim`), does them and marks them done
with their result; a claim lasts ``claim_ttl`` real seconds, so the items of a node that died
holding them go back to the live ones. The work is pulled, not dealt: a node that is twice as
fast comes back for its next claim twice as often, so it does twice the items (each node's
measured speed places the work as it goes, and a slow or dead node holds back no more than
its last claim).

The leader adds a job's items and works on them like every node (:meth:`WorkSplit.lead`),
then merges the results: for the crawl, a crawled URL's in-scope links become new items of the
same job (so the crawl is a breadth-first walk over the shared table, ending when no item is
left); for the accounts, the hop's following lists or the timelines come back to
:func:`~topicrawl.engine.accounts.run_account_pipeline`, which matches, grows, filters and
ranks as on one node. The other nodes find open jobs by looking every ``poll`` real seconds
(:meth:`WorkSplit.help`, a task beside their other work).

A crawl item is crawled by :func:`~topicrawl.engine.build.open_crawl` with the URLs as seeds
and no link followed (``max_depth`` 0, the job follows them), into the shared run, the
database's pages and the parser library's records, as the leader's own crawl would.
Partial: the depth a page is stored with is 0 (the breadth-first round it was found in is
not kept); the crawl's ``max_pages`` caps the job's items, not the pages fetched; a host's
``delay`` is kept by each node (each batch), not between nodes, so N nodes may send a host up
to N times the requests of one (the distributed mode's Redis frontier shares host turns; this
split has no shared turn yet); the scope's ``max_depth`` is not applied across waves. On the
demo (no latency, 2 cores) the split is slower than one node: a crawl is built per batch, and
the waves wait in polls (``benchmarks/revisit/README.md``, session 20).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from topicrawl.core.config import CrawlSettings, FetchSettings, PolitenessSettings
from topicrawl.core.errors import ConfigError, PermanentFetchError
from topicrawl.parse.urls import Scope
from topicrawl.sources.accountsapi import Account, AccountsClient, TimelineEntry
from topicrawl.sources.microblog import Post
from topicrawl.storage.videostore import VideoStore

__all__ = ["CRAWL", "FOLLOWS", "POSTS", "AccountFetches", "SplitSettings", "WorkSplit"]

CRAWL = "crawl"
FOLLOWS = "follows"
POSTS = "posts"

log = logging.getLogger(__name__)

Progress = Callable[[str], None]


@dataclass(frozen=True)
class SplitSettings:
    """How the nodes share a job.

    Attributes:
        crawl_batch: URLs a node claims at once (each claim is one small crawl).
        account_batch: accounts a node claims at once.
        claim_ttl: real seconds a claim lasts unless renewed (a node renews its claims every
            third of it while it works on them): a node dead for that long loses its items to
            the others.
        poll: real seconds between two looks for open jobs (or for a job's last items).
    """

    crawl_batch: int = 16
    account_batch: int = 4
    claim_ttl: float = 60.0
    poll: float = 0.25

    def __post_init__(self) -> None:
        if self.crawl_batch < 1 or self.account_batch < 1:
            raise ConfigError("the split's batches must be >= 1")
        if not (self.claim_ttl > 0 and self.poll > 0):
            raise ConfigError("the split's claim_ttl and poll must be > 0")


class WorkSplit:
    """One node's part in the split jobs of one source (see the module docstring).

    Args:
        store: the shared database's video tables.
        source: the video site (the jobs' namespace).
        node: this node's name.
        crawl: the crawl's settings (seeds, scope, parsers, storage) for crawl items.
        client: the microblog client for account items (None: this node cannot do them).
        max_following: the following list's cap (the account pipeline's).
        max_posts: the timeline's cap (the account pipeline's).
        settings: batches, claim and poll times.
    """

    def __init__(
        self,
        store: VideoStore,
        *,
        source: str,
        node: str,
        crawl: CrawlSettings,
        client: AccountsClient | None,
        max_following: int,
        max_posts: int,
        settings: SplitSettings,
    ) -> None:
        self.store = store
        self.source = source
        self.node = node
        self.crawl = crawl
        self.client = client
        self.max_following = max_following
        self.max_posts = max_posts
        self.s = settings
        self.done: dict[str, int] = {}  # job kind -> items this node did
        self._leading = 0  # jobs this node leads now (its helper stands aside meanwhile)
        self._scope = Scope.build(
            allowed_domains=crawl.scope.allowed_domains,
            include=crawl.scope.include,
            exclude=crawl.scope.exclude,
            max_url_length=crawl.fetch.max_url_length,
        )

    # -- every node ---------------------------------------------------------------------------

    async def help(self) -> None:
        """Look every ``poll`` for open jobs and work on them, until cancelled. A job this
        node cannot do (accounts with no client) or that fails is logged and left to the
        others (its claimed items go back when the claim ends)."""
        while True:
            try:
                if not self._leading:
                    for job in await self.store.split_open_jobs(self.source):
                        await self.work(job)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("node %s: a split job failed here (left to the others): %s",
                            self.node, exc)  # fmt: skip
            await asyncio.sleep(self.s.poll)

    async def work(self, job: str) -> int:
        """Claim and do ``job``'s open items until none is free; how many this node did."""
        kind = job.split(":", 1)[0]
        if kind in (FOLLOWS, POSTS) and self.client is None:
            return 0
        batch = self.s.crawl_batch if kind == CRAWL else self.s.account_batch
        did = 0
        while True:
            now = time.time()
            items = await self.store.split_claim(
                self.source, job, self.node, batch, now=now, until=now + self.s.claim_ttl
            )
            if not items:
                return did
            results = await self._holding(job, items, self._do(kind, job, items))
            await self.store.split_done(self.source, job, self.node, results)
            did += len(items)
            self.done[kind] = self.done.get(kind, 0) + len(items)

    def _do(self, kind: str, job: str, items: list[str]) -> Awaitable[dict[str, str | None]]:
        if kind == CRAWL:
            return self._crawl(job, items)
        if kind == FOLLOWS:
            return self._following(items)
        if kind == POSTS:
            return self._posts(items)
        raise ConfigError(f"unknown split job {job!r}")

    async def _holding(
        self, job: str, items: list[str], work: Awaitable[dict[str, str | None]]
    ) -> dict[str, str | None]:
        """Do ``work`` on claimed ``items``, renewing the claims every third of ``claim_ttl``
        meanwhile: a live node keeps its items however long they take, a dead one loses them
        a ``claim_ttl`` after its last renewal."""
        task = asyncio.ensure_future(work)
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=self.s.claim_ttl / 3)
                if done:
                    return task.result()
                until = time.time() + self.s.claim_ttl
                await self.store.split_renew(self.source, job, self.node, items, until=until)
        finally:
            if not task.done():
                task.cancel()
                await asyncio.wait({task})

    # -- the leader ---------------------------------------------------------------------------

    async def lead(self, job: str, items: Sequence[str]) -> dict[str, str | None]:
        """Add ``items`` to ``job``, work on it with the other nodes until every item is done
        (a crawl job grows meanwhile), and return every item's result."""
        self._leading += 1
        try:
            if await self.store.split_add(self.source, job, items):
                # A poll's wait before working: every idle node looks meanwhile and takes its
                # first claim (else a short job of fast items could be done here alone).
                await asyncio.sleep(self.s.poll)
            while True:
                await self.work(job)
                if await self.store.split_left(self.source, job) == 0:
                    return await self.store.split_results(self.source, job)
                await asyncio.sleep(self.s.poll)  # others hold the rest, or it is still growing
        finally:
            self._leading -= 1

    async def open_crawl_job(self) -> str | None:
        """A crawl job of this source left unfinished (by a leader that died), if any."""
        jobs = [j for j in await self.store.split_open_jobs(self.source) if j.startswith(CRAWL)]
        return jobs[0] if jobs else None

    async def start_crawl_job(self) -> tuple[str, list[str]]:
        """A new crawl job (its run started in the database) and its first items: the site
        and the URLs of its sitemaps."""
        from topicrawl.storage.sql import SqlStorage  # noqa: PLC0415 - the crawl's storage

        async with SqlStorage(self.crawl.storage.url) as storage:
            run_id = await storage.start_run(
                name=self.crawl.strategy,
                config=self.crawl.model_dump_json(exclude={"seeds"}),
            )
        seeds = list(self.crawl.seeds)
        if self.crawl.sitemaps:
            seeds += await self._sitemap_urls()
        return f"{CRAWL}:{run_id}", list(dict.fromkeys(seeds))

    async def finish_crawl_job(self, job: str, pages: int) -> None:
        """Close the crawl job's run with its page count."""
        from topicrawl.storage.sql import SqlStorage  # noqa: PLC0415 - the crawl's storage

        run_id = int(job.split(":", 1)[1])
        stats = {"pages": pages, "split": await self.store.split_counts(self.source, job)}
        async with SqlStorage(self.crawl.storage.url) as storage:
            await storage.finish_run(run_id, stats=json.dumps(stats))

    # -- the kinds of items -------------------------------------------------------------------

    async def _crawl(self, job: str, urls: list[str]) -> dict[str, str | None]:
        from topicrawl.engine.build import open_crawl  # noqa: PLC0415 - the crawl's whole stack
        from topicrawl.frontier.memory import MemoryFrontier  # noqa: PLC0415

        c = self.crawl
        settings = c.model_copy(
            update={
                "seeds": tuple(urls),
                "sitemaps": False,
                "max_pages": 0,
                # Parsed in this process: a parser process started for every small crawl
                # costs more than its pages (and one start hung once, under load 12, in the
                # first tests; not diagnosed further).
                "parse_workers": 0,
                "scope": c.scope.model_copy(update={"max_depth": 0}),
            }
        )
        frontier = MemoryFrontier(
            default_delay=c.politeness.delay,
            max_per_host=c.politeness.per_host,
            lease_ttl=c.frontier.lease_ttl,
        )
        run_id = int(job.split(":", 1)[1])
        try:
            async with open_crawl(settings, frontier=frontier, run_id=run_id) as crawler:
                await crawler.run()
        finally:
            await frontier.close()
        links = await self.store.page_links(urls)
        found = [u for url in urls for u in links.get(url, ()) if self._scope.allows(u)]
        if found:
            if c.max_pages:
                found = found[: max(0, c.max_pages - await self._items(job))]
            await self.store.split_add(self.source, job, found)
        return dict.fromkeys(urls)

    async def _items(self, job: str) -> int:
        return await self.store.split_left(self.source, job) + len(
            await self.store.split_results(self.source, job)
        )

    async def _sitemap_urls(self) -> list[str]:
        from topicrawl.fetch.client import HttpFetcher  # noqa: PLC0415
        from topicrawl.fetch.robots import RobotsCache  # noqa: PLC0415
        from topicrawl.sources import (  # noqa: PLC0415 - lxml only when sources are used
            SitemapSource,
            fetcher_documents,
            source_fetch_settings,
        )

        fetch = source_fetch_settings(self.crawl.fetch)
        fetcher = HttpFetcher(settings=fetch)
        polite = PolitenessSettings()
        try:
            robots = RobotsCache(
                session=fetcher.session,
                user_agent=FetchSettings().user_agent,
                error_ttl=polite.robots_error_ttl,
                max_crawl_delay=polite.max_crawl_delay,
            )
            fetcher.robots = robots
            sitemaps = SitemapSource(
                fetch=fetcher_documents(fetcher),
                sites=list(self.crawl.seeds),
                robots=robots,
                scope=self._scope,
                max_bytes=fetch.max_body_bytes,
            )
            return [r.url async for r in sitemaps.requests()]
        finally:
            await fetcher.close()

    async def _following(self, ids: list[str]) -> dict[str, str | None]:
        assert self.client is not None
        out: dict[str, str | None] = {}
        for account_id in ids:
            try:
                found = await self.client.following(account_id, max_accounts=self.max_following)
            except PermanentFetchError as exc:
                log.warning("following list of %s not readable: %s", account_id, exc)
                out[account_id] = None
                continue
            out[account_id] = json.dumps([asdict(a) for a in found])
        return out

    async def _posts(self, ids: list[str]) -> dict[str, str | None]:
        assert self.client is not None
        out: dict[str, str | None] = {}
        for account_id in ids:
            try:
                entries = await self.client.statuses(account_id, max_posts=self.max_posts)
            except PermanentFetchError as exc:  # private or gone: judged on no posts
                log.warning("posts of account %s not readable: %s", account_id, exc)
                entries = []
            out[account_id] = json.dumps([asdict(e) for e in entries])
        return out


def accounts_of(result: str | None) -> list[Account] | None:
    """A following list as a split job stored it (None: it was not readable)."""
    if result is None:
        return None
    return [Account(**row) for row in json.loads(result)]


def timeline_of(result: str | None) -> list[TimelineEntry]:
    """A timeline as a split job stored it."""
    if result is None:
        return []
    return [TimelineEntry(post=_post(row["post"]), repost=bool(row["repost"]))
            for row in json.loads(result)]  # fmt: skip


def _post(row: Mapping[str, Any]) -> Post:
    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in row.items()}
    return Post(**fields)


class AccountFetches:
    """The account pipeline's per-account reads done by every node through a split job:
    :func:`~topicrawl.engine.accounts.run_account_pipeline` calls these for a hop's
    following lists and for the timelines; the leader waits for them and merges."""

    def __init__(self, split: WorkSplit, run: str) -> None:
        self.split = split
        self.run = run

    async def following_many(self, ids: Sequence[str], hop: int) -> dict[str, list[Account] | None]:
        results = await self.split.lead(f"{FOLLOWS}:{self.run}:{hop}", ids)
        return {a: accounts_of(results.get(a)) for a in ids}

    async def statuses_many(self, ids: Sequence[str]) -> dict[str, list[TimelineEntry]]:
        results = await self.split.lead(f"{POSTS}:{self.run}", ids)
        return {a: timeline_of(results.get(a)) for a in ids}
