"""The crawl loop: lease a URL, fetch it, parse it, let the strategy score its links, store.

The loop owns no policy. The frontier decides what is next and keeps hosts polite, the
fetcher fetches, the strategy scores, storage keeps. The loop catches each component's errors
at its boundary and reports them three ways: a log line, a failure record, and a counter in
``CrawlStats.errors`` keyed by the error kind.

Durability: storage and frontier buffer their writes. A periodic checkpoint flushes storage
first and the frontier second, and while it runs, acks are held back, so the frontier never
durably marks a URL done whose page is not yet durably stored. After a crash the URLs leased
or acked since the last checkpoint are fetched again; nothing is lost. A frontier that is not
``durable`` (in memory) has nothing to protect, so its acks are never held back: a held ack
keeps its host's lease out, and the URLs popped meanwhile would depend on when the checkpoint
ran (with one request in flight the fetch order would then differ from run to run). A
frontier that seals acks (the SQLite one) takes them at once instead: the checkpoint seals the
acks made so far, flushes storage, then commits the sealed acks only. Held acks kept their
leases out for the whole checkpoint; when a checkpoint outlasted the lease (a storage writer
far behind the fetcher, on a loaded machine) they expired and their URLs were fetched again.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import operator
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from topicrawl.core.errors import (
    BlockedError,
    BodyTooLarge,
    DatabaseLocked,
    FetchError,
    FrontierError,
    FrontierLocked,
    LeaseLost,
    RetryableFetchError,
    StorageError,
)
from topicrawl.core.metrics import LatencyHistogram
from topicrawl.core.models import (
    CrawlStats,
    ErrorKind,
    FetchFailure,
    FetchOutcome,
    Lease,
    Page,
    Request,
    Response,
    StrategyResult,
)
from topicrawl.core.protocols import Fetcher, Frontier, KnownUrls, Storage, Strategy
from topicrawl.core.tasks import cancel_and_wait
from topicrawl.engine.admission import Admission
from topicrawl.engine.held import HeldHosts, HostHolds, describe, leave_queued
from topicrawl.engine.heldback import HeldBackLinks
from topicrawl.engine.hosts import CrawlDelays, HostPolicy
from topicrawl.engine.revisit import RevisitControl
from topicrawl.engine.slots import RequestSlots, RequestSpacing
from topicrawl.parse.urls import Scope, host_of
from topicrawl.parse.worker import ParsedDocument

if TYPE_CHECKING:
    from topicrawl.engine.render import RenderStage
    from topicrawl.engine.video import VideoStage

__all__ = [
    "CrawlDelays",
    "CrawlLimits",
    "Crawler",
    "FetchOutcomeFn",
    "FetchReports",
    "HostPolicy",
    "PageBudget",
    "SpacesRequests",
]

log = logging.getLogger(__name__)

_nofollow_flags = operator.attrgetter("nofollow")
_SAID = 10  # refused start URLs logged one by one; the rest are counted

ParseFn = Callable[[Response], Awaitable[ParsedDocument]]
ProgressFn = Callable[[CrawlStats], None]
FetchOutcomeFn = Callable[[FetchOutcome], None]
# Failures that mean no answer came (a lost fetch); other failures without a status (robots.txt,
# scope, caps, filters) say nothing of how the host treats this node and are not reported.
_NO_ANSWER = frozenset({ErrorKind.TIMEOUT, ErrorKind.CONNECTION, ErrorKind.DNS, ErrorKind.PROXY})


@dataclass(frozen=True, slots=True, kw_only=True)
class CrawlLimits:
    """When the crawl stops and how far it reaches.

    ``max_pages`` counts stored pages over the whole crawl, resumed runs included (0 = no
    limit). ``max_blocked`` is how often a URL may be put back because its server asked us to
    slow down before it is given up as failed. ``max_held_bytes`` bounds the bodies held
    between fetch and storage: above it no new fetch starts until some are stored, so a run
    of big pages slows the crawl down instead of growing its memory.

    ``concurrency`` is requests in flight, and ``per_host`` requests in flight to one host
    (0: only the frontier's lease limit caps a host). ``pages_in_hand`` (at least
    ``concurrency``; 0 means equal) is how many URLs the crawl works on at once: above
    ``concurrency``, a URL can be fetched while other pages, their requests done, are still
    parsed and stored. The frontier must then allow a host more leases than ``per_host``.

    With ``shared_storage``
    (other processes store pages of the same crawl: distributed workers) the page count is
    re-read from storage at every checkpoint, so ``max_pages`` bounds the whole crawl; it can
    then overshoot by what the processes fetch in one checkpoint interval.
    """

    max_pages: int = 0
    max_depth: int = 50
    concurrency: int = 16
    per_host: int = 0
    pages_in_hand: int = 0
    follow_nofollow: bool = False
    max_blocked: int = 3
    checkpoint_interval: float = 1.0
    max_held_bytes: int = 32_000_000
    shared_storage: bool = False
    hold_patience: float = 60.0
    """Seconds of a host's hold (robots.txt unreadable, a server's long wait) the crawl waits
    out when nothing else is left; a longer hold ends the crawl (see engine.held)."""
    max_seconds: float = 0.0
    """Seconds the crawl runs before it stops (0 = no limit): a revisit crawl never empties."""


class PageBudget(Protocol):
    async def reserve_page(
        self,
        lease: Lease,
        requests: Sequence[Request],
        *,
        stopping: asyncio.Event | None = None,
    ) -> int | None:
        """Take one page of the crawl's limit for the lease's page before it is stored, and
        queue ``requests`` (its links) with it: how many were added, or None when no page is
        left (nothing is queued). The reservation is the lease's: acking it makes it final,
        reclaiming it gives the page back. A wait for other reservations to settle ends
        (None) when ``stopping`` is set. Raises LeaseLost when the lease is no longer the
        caller's (nothing is reserved; the page is not to be stored)."""
        ...


@runtime_checkable
class FetchReports(Protocol):
    """A frontier that counts requests in flight itself (e.g. over several processes), so it
    is told as soon as a lease's request is done, long before the lease is acked."""

    async def fetched(self, lease: Lease) -> None: ...


@runtime_checkable
class SpacesRequests(Protocol):
    """A frontier that keeps each host's next request start itself (e.g. for several
    processes); see :class:`~topicrawl.engine.slots.RequestSpacing` for the contract."""

    async def claim_request(self, host: str, delay: float) -> float: ...


@runtime_checkable
class SealsAcks(Protocol):
    """A durable frontier that can commit the acks made up to a point and none after (see
    :meth:`~topicrawl.frontier.SqliteFrontier.seal_acks`): its checkpoint holds no ack back."""

    def seal_acks(self) -> None: ...

    async def flush_sealed(self) -> None: ...


@runtime_checkable
class RenewsLeases(Protocol):
    """A frontier whose leases can be extended while their pages are still in hand (see
    :meth:`~topicrawl.frontier.MemoryFrontier.renew`)."""

    async def renew(self, leases: Sequence[Lease]) -> dict[str, float]: ...


def _no_answer(exc: FetchError) -> int | None:
    """0 (a lost fetch) for a failure that means no answer came, else None (not reported)."""
    return 0 if exc.kind in _NO_ANSWER else None


def _hook_spacing(fetcher: Fetcher, spaced: Callable[[str], Awaitable[None]]) -> bool:
    """Have the fetcher (and its robots.txt cache) await ``spaced`` before each request they
    make, if they take such a hook (``before_request``); whether the fetcher took it."""
    if not hasattr(fetcher, "before_request"):
        return False
    fetcher.before_request = spaced
    robots = getattr(fetcher, "robots", None)
    if robots is not None and hasattr(robots, "before_request"):
        robots.before_request = spaced
    return True


def body_within(response: Response, url: str, max_bytes: int, *, cap: str = "the cap") -> bytes:
    """The body of the response to ``url`` as bytes, at most ``max_bytes`` (``cap`` names
    that limit in the error).

    Raises:
        BodyTooLarge: the body is longer.
    """
    body = response.body
    raw = body.encode("utf-8") if isinstance(body, str) else body
    if len(raw) > max_bytes:
        raise BodyTooLarge(url, f"{len(raw):,} bytes, over {cap} of {max_bytes:,}")
    return raw


@dataclass(frozen=True, slots=True)
class _InHand:
    """A page in hand: its lease and when it was taken (the crawl's clock)."""

    lease: Lease
    taken_at: float


class Crawler:
    """Runs one crawl to completion, to its page limit, or until :meth:`stop`.

    Args:
        fetcher, frontier, storage, strategy: the collaborators.
        parse: turns an HTML response into a parsed page and the hash of its text.
        scope: which URLs may be followed.
        hosts: robots.txt and Crawl-delay per host.
        limits: stop conditions and depth.
        run_id: the storage run this crawl writes under.
        on_progress: called after every page with the running stats.
        on_checkpoint: awaited after every periodic checkpoint (e.g. to save learned state);
            its errors are logged, never fatal.
        page_budget: reserves each page before it is stored, when processes share the
            crawl's page limit (distributed workers); a page refused is not stored, its URL
            goes back to the queue, and the crawl stops.
        revisit: when given, a fetched page is queued again for when it is due (see
            engine.revisit) instead of being marked done.
        on_fetch: told how each fetch of a lease's URL went (its status, 0 for no answer,
            and seconds); a distributed worker feeds its assignment policy with it. It must
            not block; its errors are logged, never fatal.
    """

    _SWEEP_EVERY = 5.0
    """Seconds between two sweeps of expired leases (and renewals of the pages in hand)."""
    _HOLD_MAX = 1800.0
    """Seconds a page in hand may keep its lease by renewals (see _renew_in_hand)."""

    def __init__(
        self,
        *,
        fetcher: Fetcher,
        frontier: Frontier,
        storage: Storage,
        strategy: Strategy,
        parse: ParseFn,
        scope: Scope,
        hosts: HostPolicy,
        limits: CrawlLimits,
        run_id: int,
        on_progress: ProgressFn | None = None,
        on_checkpoint: Callable[[], Awaitable[None]] | None = None,
        page_budget: PageBudget | None = None,
        clock: Callable[[], float] = time.time,
        revisit: RevisitControl | None = None,
        video: VideoStage | None = None,
        extra_fetcher: Fetcher | None = None,
        render: RenderStage | None = None,
        on_fetch: FetchOutcomeFn | None = None,
    ) -> None:
        self._fetcher = fetcher
        self._on_fetch = on_fetch
        self._video = video
        self._render = render
        # Manifests and media files: another content-type filter and size cap than pages.
        self._extra_fetcher = extra_fetcher or fetcher
        self._frontier = frontier
        self._storage = storage
        self._strategy = strategy
        self._parse = parse
        self._scope = scope
        self._hosts = hosts
        self._limits = limits
        self._run_id = run_id
        self._on_progress = on_progress
        self._budget = page_budget
        self.limit_reached = False
        self._on_checkpoint = on_checkpoint
        self._clock = clock
        self.stats = CrawlStats()
        self._stopping = asyncio.Event()
        self._wakeup = asyncio.Event()
        self._idle = 0
        self._started_pages = 0
        self._in_progress = 0
        self._blocked: dict[str, int] = {}
        self._admission = Admission(scope=scope, max_depth=limits.max_depth)
        self._held = HeldHosts(patience=limits.hold_patience)
        self._holds = frontier if isinstance(frontier, HostHolds) else None
        self._left_held = False  # the held hosts' URLs were recorded (once, by one worker)
        self._checkpointing = False
        self._held_acks: list[tuple[Lease, float | None]] = []  # (lease, revisit due time)
        self._in_hand: dict[str, _InHand] = {}  # by token: the leases of the pages in hand
        self.leases_renewed = 0
        """Renewals of the leases of pages in hand (see :meth:`_renew_in_hand`)."""
        self._revisit = revisit
        self._hold_acks = frontier.durable  # see the module doc
        self._fatal: BaseException | None = None
        self._held_bytes = 0
        # The frontier's in-process "seen" test, when the strategy has no use for seen links
        # (looked up once: an isinstance check against a runtime Protocol costs ~20 us a page).
        self._known: Callable[[Sequence[str]], list[bool]] | None = None
        if not getattr(strategy, "follows_known_links", True) and isinstance(frontier, KnownUrls):
            self._known = frontier.known
        # One strategy call at a time when on_page may run in a worker thread (see
        # Strategy.runs_in_thread); the lock is only taken then.
        self._strategy_lock = asyncio.Lock()
        self._room = asyncio.Event()
        self._room.set()
        self._slots: RequestSlots | None = None  # made in run(): needs the running loop
        self._fetched = frontier.fetched if isinstance(frontier, FetchReports) else None
        # politeness.delay spaces request starts to a host, whatever per_host allows in flight.
        self._claim = (
            frontier.claim_request
            if isinstance(frontier, SpacesRequests)
            else RequestSpacing().claim
        )
        # Every request the fetcher makes (robots.txt, redirect hops, retries) is spaced too
        # when it takes a hook; else only each lease's first request is (in _fetch).
        self._fetcher_spaces = _hook_spacing(fetcher, self._spaced)
        # Read by the live samples and the metrics endpoint (topicrawl.engine.samples): plain
        # counters, no lock, nothing but an addition or two per page.
        self.fetch_latency = LatencyHistogram()
        self.strategy_seconds = 0.0
        self._handling = 0  # pages fetched and being parsed, scored or stored
        self._held_back: HeldBackLinks | None = None  # made in run() when resuming
        self._recount = asyncio.Lock()

    @property
    def video_counts(self) -> Mapping[str, int]:
        """The video stage's counts (video pages by class, manifests and media fetched)."""
        return self._video.counts if self._video is not None else {}

    @property
    def render_counts(self) -> Mapping[str, int]:
        """The render stage's counts (pages rendered and why, browser requests, restarts)."""
        return self._render.counts if self._render is not None else {}

    @property
    def scope(self) -> Scope:
        return self._scope

    @property
    def frontier(self) -> Frontier:
        return self._frontier

    @property
    def strategy(self) -> Strategy:
        return self._strategy

    @property
    def storage(self) -> Storage:
        return self._storage

    @property
    def run_id(self) -> int:
        return self._run_id

    @property
    def parse_backlog(self) -> int:
        """Pages whose response is in and that wait for or go through parsing, scoring and
        storing."""
        return self._handling

    @property
    def leases_in_hand(self) -> int:
        """Leases this crawler popped and is still working on (fetching, waiting for their
        host's turn, parsing or storing): its queue, as a worker's heartbeat reports it."""
        return len(self._in_hand)

    @property
    def admission(self) -> Admission:
        """The check every queued request passes (and its counts of refusals)."""
        return self._admission

    def stop(self) -> None:
        """Stop taking new URLs; the ones in flight finish and are stored."""
        self._stopping.set()
        self._wakeup.set()

    async def seed(self, requests: Iterable[Request]) -> int:
        """Queue start requests (already-seen URLs are ignored, so resuming is safe).

        A start request the admission refuses (too long, out of scope) is logged as a warning
        and recorded as a failure: a user gave it and must hear why it was not crawled.
        """
        async with self._strategy_turn():
            scored = list(self._strategy.seeds(requests))
        kept, refused = self._admission.sort(scored)
        for number, out in enumerate(refused):
            if number < _SAID:
                log.warning("start URL not crawled: %s: %s", out.request.url[:200], out.message)
            await self._record(out.request, out.refusal.kind, out.message)
        if len(refused) > _SAID:
            log.warning("%d more start URLs not crawled (see the failures)", len(refused) - _SAID)
        return await self._push(kept)

    async def _push(self, requests: Sequence[Request]) -> int:
        """Queue requests the admission has let through."""
        if not requests:
            return 0
        added = await self._frontier.push(requests)
        self._pushed(added)
        return added

    def _pushed(self, added: int) -> None:
        self.stats.queued += added
        if added:
            self._wakeup.set()

    async def run(self) -> CrawlStats:
        """Crawl until the frontier is empty, the page limit is reached, or stop() is called.

        Raises:
            StorageError: the database failed; what was stored before is kept.
        """
        self.stats.started_at = self._clock()
        self.stats.pages = self._started_pages = await self._storage.count_pages()
        if self._started_pages and getattr(self._strategy, "holds_back_links", False):
            self._held_back = HeldBackLinks(
                storage=self._storage,
                frontier=self._frontier,
                before=self.stats.started_at,
                follow_nofollow=self._limits.follow_nofollow,
            )
        limits = self._limits
        self._slots = RequestSlots(total=limits.concurrency, per_host=limits.per_host)
        tasks = max(limits.concurrency, limits.pages_in_hand)
        try:
            async with asyncio.TaskGroup() as group:
                checkpoints = group.create_task(self._checkpoint_loop())
                sweeper = group.create_task(self._sweep_loop())
                workers = [group.create_task(self._worker()) for _ in range(tasks)]
                await asyncio.gather(*workers)
                await cancel_and_wait(checkpoints)
                await cancel_and_wait(sweeper)
        finally:
            self.stats.finished_at = self._clock()
            if not self._left_held:  # else: the holds its URLs were left queued for
                self.stats.held = self._held.current(self.stats.finished_at)
            await self._last_checkpoint()
        if self._fatal is not None:
            raise self._fatal
        return self.stats

    def _limit_reached(self) -> bool:
        limit, seconds = self._limits.max_pages, self._limits.max_seconds
        if seconds and self._clock() - self.stats.started_at >= seconds:
            return True
        return bool(limit) and self.stats.pages + self._in_progress >= limit

    async def _worker(self) -> None:
        while not self._stopping.is_set():
            if self._limit_reached():
                if self._in_progress == 0:
                    if await self._counted_twice():
                        continue
                    self.stop()
                    return
                await self._wait(0.05)
                continue
            if not self._room.is_set():
                await self._room.wait()
                continue
            # Reserve the slot before awaiting, so two workers cannot both take the last one.
            self._in_progress += 1
            lease = await self._frontier.pop()
            if lease is None:
                self._in_progress -= 1
                if await self._finished():
                    if await self._revive() or await self._bring_back():
                        continue
                    await self._leave_held()
                    self.stop()
                    return
                self._show_holds()
                wait = await self._frontier.next_ready_in()
                await self._wait(0.5 if wait is None else min(max(wait, 0.001), 0.5))
                continue
            self._in_hand[lease.token] = _InHand(lease, self._clock())
            try:
                await self._process(lease)
            except StorageError as exc:
                self._fatal = exc
                log.exception("storage failed, stopping the crawl")
                await self._frontier.reclaim(lease)
                self.stop()
            finally:
                del self._in_hand[lease.token]
                self._in_progress -= 1
                self._wakeup.set()

    async def _renew_in_hand(self) -> None:
        """Keep the leases of the pages in hand (fetched, parsed, waiting for storage...) from
        expiring: a lease's expiry is for a holder that died, and a live crawl on a loaded
        machine can hold a page longer than a lease lasts (session 18's 86,000-page crawl
        lost 327 leases so while its storage writer was behind, and fetched and stored those
        pages twice). Each sweep renews the leases of pages in hand for a sweep or more, up to
        ``_HOLD_MAX`` seconds: a page in hand longer is stuck, and its URL goes back to the
        queue when its lease runs out."""
        if not isinstance(self._frontier, RenewsLeases) or not self._in_hand:
            return
        now = self._clock()
        due = [
            held.lease
            for held in self._in_hand.values()
            if self._SWEEP_EVERY <= now - held.taken_at < self._HOLD_MAX
        ]
        if not due:
            return
        try:
            renewed = await self._frontier.renew(due)
        except FrontierError as exc:
            log.warning("leases of pages in hand not renewed now: %s", exc)
            return
        self.leases_renewed += len(renewed)

    async def _counted_twice(self) -> bool:
        """Whether the page limit was reached only by counting pages stored twice: a resumed
        crawl fetches again the pages stored just before the last run stopped (their acks
        were not yet durable, see the module doc), and storing one again replaces its row.
        The count is then set to what storage holds."""
        if not self._started_pages or self._limits.shared_storage:
            return False
        async with self._recount:
            if self._in_progress or not self._limit_reached():
                return True  # another worker recounted meanwhile and went on
            counted = self.stats.pages
            stored = await self._storage.count_pages()
            if stored >= counted:
                return False
            self.stats.pages = stored
            return not self._limit_reached()

    async def _finished(self) -> bool:
        """Nothing in hand or leased, and nothing queued but URLs of hosts held longer than
        the crawl waits (see engine.held)."""
        if self._in_progress or await self._frontier.in_flight():
            return False
        queued = await self._frontier.queued()
        if queued == 0:
            return True
        lasting = self._held.lasting(self._clock())
        if not lasting or self._holds is None:
            return False
        return queued == await self._holds.queued_in(h.host for h in lasting)

    async def _leave_held(self) -> None:
        """The crawl ends with only held hosts' URLs queued: record each as a failure (kind
        ``host_held``) and say which hosts and why. The URLs stay queued, so a resumed crawl
        (durable frontier) tries them again."""
        lasting = self._held.lasting(self._clock())
        if not lasting or self._holds is None or self._left_held:
            return
        self._left_held = True
        self.stats.held = {h.host: h for h in lasting}
        left = await leave_queued(self._holds, lasting, self._record)
        after = (
            "they stay queued: run the same command again to retry them"
            if self._frontier.durable
            else "the frontier is in memory, so they are not kept"
        )
        log.warning(
            "the crawl ends with only held hosts left: %s; %d URLs not fetched (%s)",
            describe(lasting),
            left,
            after,
        )

    def _show_holds(self) -> None:
        """Keep the progress line's account of held hosts current while workers wait."""
        if not self.stats.held:
            return
        self.stats.held = self._held.current(self._clock())
        if self._on_progress is not None:
            self._on_progress(self.stats)

    async def _revive(self) -> bool:
        """Ask the strategy for held-back requests before declaring the crawl done.

        What a strategy held back may since have been queued or fetched through another link
        (the frontier drops those), so it is asked again until something is new to the
        frontier, or it offers nothing it has not offered in this round already: a focused
        crawl of the Java docs otherwise stopped at 1,853 of its 3,000 pages with 6,754
        links still held back, its best 64 all fetched already.
        """
        limit = max(self._limits.concurrency * 4, 64)
        offered: set[str] = set()
        while True:
            async with self._strategy_turn():
                requests = list(self._strategy.on_idle(limit))
            fresh = [r for r in requests if r.url not in offered]
            if not fresh:
                return False
            offered.update(r.url for r in fresh)
            if await self._push(self._admission.admit(fresh)):
                return True

    async def _bring_back(self) -> bool:
        """Queue links the strategy held back before a restart (see engine.heldback)."""
        if self._held_back is None:
            return False
        limit = max(self._limits.concurrency * 4, 64)
        while links := await self._held_back.take(limit):
            if await self._push(self._admission.admit(links)):
                return True
        return False

    async def _wait(self, seconds: float) -> None:
        # asyncio.timeout, not wait_for: Python 3.11's wait_for returns normally when it is
        # cancelled just as the event is set, so a worker woken by a failing worker's last act
        # lost the TaskGroup's cancellation and polled on for ever.
        self._wakeup.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._wakeup.wait()

    async def _process(self, lease: Lease) -> None:
        request = lease.request
        try:
            await self._hosts.prepare(request.url, self._frontier)
            response = await self._fetch(lease)
        except BlockedError as exc:
            await self._blocked_by_server(lease, exc)
            return
        except FetchError as exc:
            await self._fail(lease, exc.kind, exc.message, status=exc.status)
            return
        self._hold(len(response.body))
        self._handling += 1
        try:
            await self._handle(lease, response)
        finally:
            self._handling -= 1
            self._hold(-len(response.body))

    async def _fetch(self, lease: Lease) -> Response:
        slots = self._slots
        assert slots is not None  # run() made them
        await slots.acquire(lease.host)
        try:
            if not self._fetcher_spaces:
                await self._spaced(lease.request.url)
            # A fetch still running when its lease expires is lost work (the frontier hands
            # the URL out again): it is abandoned then, so a fetcher that never returns
            # cannot keep a crawl whose work is done from ending (issue #26 item 1). It ends
            # a little before the lease does, so its failure is acked, not fetched again.
            deadline = max(0.9 * (lease.expires_at - time.time()), 0.0)
            started = time.perf_counter()
            status: int | None = None  # None (cancelled, or says nothing of the host): unreported
            try:
                async with asyncio.timeout(deadline):
                    if self._revisit is not None:
                        response = await self._revisit.fetch(self._fetcher, lease.request)
                    else:
                        response = await self._fetcher.fetch(lease.request)
                status = response.status
                return response
            except TimeoutError as exc:
                status = 0
                raise RetryableFetchError(
                    lease.request.url,
                    f"the fetch outlived its lease ({deadline:.0f}s)",
                    kind=ErrorKind.TIMEOUT,
                ) from exc
            except FetchError as exc:
                status = exc.status if exc.status is not None else _no_answer(exc)
                raise
            finally:
                seconds = time.perf_counter() - started
                self.fetch_latency.observe(seconds)
                if self._on_fetch is not None and status is not None:
                    self._report_fetch(FetchOutcome(lease.host, status, seconds))
        finally:
            slots.release(lease.host)
            if self._fetched is not None:
                await self._fetched(lease)
                self._wakeup.set()  # the host may take another request now

    def _report_fetch(self, outcome: FetchOutcome) -> None:
        """Tell ``on_fetch`` how a fetch went; its failure is logged, not fatal (the page's
        own fetch went as it went)."""
        assert self._on_fetch is not None
        try:
            self._on_fetch(outcome)
        except Exception:
            log.exception("the fetch outcome listener failed; the crawl goes on")

    async def _spaced(self, url: str) -> None:
        """Wait for the turn of a request to the URL's host (``politeness.delay``, or its
        robots.txt Crawl-delay, between request starts; across processes when the frontier
        keeps the turns)."""
        host = host_of(url)
        delay = self._hosts.floor(host)
        if delay > 0:
            # A wait for a time (the host's turn, maybe another process's), not an event.
            while (wait := await self._claim(host, delay)) > 0:  # noqa: ASYNC110
                await asyncio.sleep(wait)

    def _hold(self, size: int) -> None:
        self._held_bytes += size
        if self._held_bytes > self._limits.max_held_bytes:
            self._room.clear()
        else:
            self._room.set()

    async def _handle(self, lease: Lease, response: Response) -> None:
        request = lease.request
        if response.status == 304 and self._revisit is not None:  # unchanged since last time
            await self._ack(lease, due=self._revisit.observe(response, None))
            return
        again = self._revisit is not None and self._revisit.known(request.url)  # claimed then
        if (
            response.final_url != request.url
            and not again
            and not await self._claim_target(response)
        ):
            # The redirect ends on a page the crawl knows under its own URL: it is (or will be)
            # stored there, so storing it again here would only make a second row.
            await self._ack(lease)
            return
        if self._render is not None:
            try:
                response = await self._render.apply(response)
            except FetchError as exc:
                await self._fail(lease, exc.kind, exc.message, status=exc.status)
                return
        try:
            document = await self._parse(response)
        except (ValueError, TypeError, UnicodeError, RecursionError) as exc:
            log.exception("could not parse %s", request.url)
            await self._fail(lease, ErrorKind.PARSE, f"{type(exc).__name__}: {exc}")
            return
        duplicate_of = None
        if document.digest is not None:
            duplicate_of = await self._storage.find_content_hash(document.digest)
            if duplicate_of == request.url:
                duplicate_of = None
        page = self._build_page(request, response, document, duplicate_of)
        if document.video is not None and self._video is not None:
            page = await self._video.apply(page, response.body, document.video)
        await self._keep(lease, page, response)

    async def fetch_extra(self, url: str, parent: str, max_bytes: int) -> bytes:
        """Fetch a manifest or media file found on page ``parent`` as politely as a page
        (see :meth:`fetch_politely`); at most ``max_bytes`` (else
        :class:`~topicrawl.core.errors.BodyTooLarge`).

        Raises:
            FetchError: as a page's fetch would (robots.txt, scope, HTTP errors, caps).
        """
        response = await self.fetch_politely(self._extra_fetcher, url, parent)
        return body_within(response, url, max_bytes)

    async def fetch_politely(self, fetcher: Fetcher, url: str, parent: str) -> Response:
        """Fetch ``url`` (found on or loaded by page ``parent``) with ``fetcher`` as politely
        as a page: the host's robots.txt (the fetcher's), delay and concurrency.

        Raises:
            FetchError: as ``fetcher`` raises it.
        """
        slots = self._slots
        assert slots is not None  # run() made them
        host = host_of(url)
        await self._hosts.prepare(url, self._frontier)
        await slots.acquire(host)
        try:
            delay = self._hosts.floor(host)
            if delay > 0:
                while (wait := await self._claim(host, delay)) > 0:  # noqa: ASYNC110
                    await asyncio.sleep(wait)
            return await fetcher.fetch(Request(url=url, parent_url=parent))
        finally:
            slots.release(host)

    async def _claim_target(self, response: Response) -> bool:
        """Whether a redirect's target is new to the crawl (then the admission remembers it as
        fetched, so a link to it is not queued)."""
        target = response.final_url
        if await self._frontier.seen(target):
            return False
        return self._admission.claim_redirect_target(target)

    def _build_page(
        self,
        request: Request,
        response: Response,
        document: ParsedDocument,
        duplicate_of: str | None,
    ) -> Page:
        parsed = document.page
        links = parsed.links
        if not self._limits.follow_nofollow and any(map(_nofollow_flags, links)):
            links = tuple(link for link in links if not link.nofollow)
        return Page(
            url=request.url,
            final_url=response.final_url,
            status=response.status,
            depth=request.depth,
            fetched_at=response.fetched_at,
            content_type=response.content_type,
            title=parsed.title,
            text=parsed.text,
            links=links,
            lang=parsed.lang,
            parent_url=request.parent_url,
            content_hash=document.digest,
            duplicate_of=duplicate_of,
            score=request.score,
            reasons=request.reasons,
            elapsed=response.elapsed,
            size=len(response.body),
            encoding=response.encoding or document.encoding,
            redirects=response.redirects,
            noindex=parsed.noindex,
            terms=document.terms,
            entities=document.entities,
            record=document.extraction.record if document.extraction is not None else None,
        )

    async def _keep(self, lease: Lease, page: Page, response: Response) -> None:
        # A duplicate's links are followed too: same text does not mean same links, and
        # skipping them could lose pages; traps are bounded by depth and scope instead (the
        # admission applies both to every request, whichever way it comes).
        started = time.perf_counter()
        result = await self._on_page(self._for_strategy(page))
        self.strategy_seconds += time.perf_counter() - started
        requests = self._admission.admit(result.requests)
        if self._budget is not None:
            # Shared page limit (processes of one crawl): the page's reservation and its
            # links go to the frontier in one round trip, before the page is stored. At the
            # limit the strategy has seen a page that is not stored (at most the pages in hand).
            try:
                added = await self._budget.reserve_page(lease, requests, stopping=self._stopping)
            except LeaseLost as exc:
                # Its URL is queued again (maybe fetched by another worker already): storing
                # the page here would count it twice against the limit.
                log.info("page not stored: %s", exc)
                return
            if added is None:
                self.limit_reached = True
                await self._frontier.reclaim(lease)
                self.stop()
                return
            self._pushed(added)
        if result.relevance is not None:
            page = dataclasses.replace(
                page,
                relevance=result.relevance,
                topic=result.topic,
                link_scores=result.link_scores,
            )
        await self._storage.save_page(
            page, run_id=self._run_id, body=response.body, headers=response.headers
        )
        self.stats.pages += 1
        self.stats.bytes += page.size
        if page.duplicate_of is not None:
            self.stats.duplicates += 1
        if result.relevant:
            self.stats.relevant += 1
        if self._budget is None:
            await self._push(requests)
        if result.rescored:
            await self._frontier.rescore(dict(result.rescored))
        due = None
        if self._revisit is not None:
            due = self._revisit.observe(response, page.content_hash, relevance=page.relevance)
        await self._ack(lease, due=due)
        if self.stats.held:
            self.stats.held = self._held.current(self._clock())
        if self._on_progress is not None:
            self._on_progress(self.stats)

    async def _on_page(self, page: Page) -> StrategyResult:
        if self._threaded():
            async with self._strategy_lock:
                return await asyncio.to_thread(self._strategy.on_page, page)
        if self._strategy_lock.locked():  # a threaded call is still running
            async with self._strategy_lock:
                return self._strategy.on_page(page)
        return self._strategy.on_page(page)  # the common case: no lock, no context manager

    def _threaded(self) -> bool:
        return bool(getattr(self._strategy, "runs_in_thread", False))

    @contextlib.asynccontextmanager
    async def _strategy_turn(self) -> AsyncIterator[None]:
        """The strategy to oneself: wait while it works in a thread. A strategy that never
        runs in one (the lock is free and stays free) costs no wait here."""
        if self._threaded() or self._strategy_lock.locked():
            async with self._strategy_lock:
                yield
        else:
            yield

    def _for_strategy(self, page: Page) -> Page:
        """The page as the strategy sees it: without seen links, if it has no use for them.

        A strategy that only queues new URLs (breadth-first) would otherwise build a request
        for each of a page's links, most of them seen before, only for the frontier to drop
        them; the page as stored keeps all its links either way.
        """
        if not page.links:
            return page
        if page.depth >= self._limits.max_depth:
            # Its links are too deep to queue: a strategy that held them back would only
            # offer them again (and push better ones out of its pool).
            return dataclasses.replace(page, links=())
        if self._known is None:
            return page
        known = self._known([link.url for link in page.links])
        fresh = tuple(link for link, seen in zip(page.links, known, strict=True) if not seen)
        return dataclasses.replace(page, links=fresh)

    async def _fail(
        self, lease: Lease, kind: ErrorKind, message: str, *, status: int | None = None
    ) -> None:
        request = lease.request
        attempts = 1 + self._blocked.pop(request.url, 0)
        failure = await self._record(request, kind, message, status=status, attempts=attempts)
        async with self._strategy_turn():
            extra = list(self._strategy.on_error(request, failure))
        await self._push(self._admission.admit(extra))
        revisit = self._revisit
        await self._ack(lease, due=None if revisit is None else revisit.after_failure(request.url))

    async def _record(
        self,
        request: Request,
        kind: ErrorKind,
        message: str,
        *,
        status: int | None = None,
        attempts: int = 1,
    ) -> FetchFailure:
        """Store and count a failure of ``request``."""
        failure = FetchFailure(
            url=request.url,
            kind=kind,
            message=message,
            at=self._clock(),
            status=status,
            depth=request.depth,
            parent_url=request.parent_url,
            attempts=attempts,
        )
        self.stats.errors[kind.value] = self.stats.errors.get(kind.value, 0) + 1
        log.debug("failed %s: %s (%s)", request.url, message, kind.value)
        await self._storage.save_failure(failure, run_id=self._run_id)
        return failure

    async def _blocked_by_server(self, lease: Lease, exc: BlockedError) -> None:
        url = lease.request.url
        times = self._blocked.get(url, 0) + 1
        if times > self._limits.max_blocked:
            await self._fail(lease, exc.kind, exc.message, status=exc.status)
            return
        self._blocked[url] = times
        delay = exc.retry_after if exc.retry_after is not None else 2.0**times
        host = host_of(url)
        robots = exc.kind is ErrorKind.ROBOTS  # its robots.txt cannot be read just now
        if not robots:
            log.info("server asked to slow down for %s; retrying in %.1f s", url, delay)
            floor = self._hosts.floor(host)
            await self._frontier.set_host_delay(host, max(min(delay, 60.0), floor))
        if self._holds is not None:
            await self._holds.pause_host(host, delay)
        await self._frontier.reclaim(lease, delay=delay)
        self._hold_host(host, url, exc, delay, robots=robots)

    def _hold_host(
        self, host: str, url: str, exc: BlockedError, delay: float, *, robots: bool
    ) -> None:
        """Hold the host (see engine.held); say so once when the hold is long."""
        now = self._clock()
        reason = (self._hosts.problem(url) if robots else None) or exc.message
        if exc.status is not None and not robots:
            reason = f"{reason} (HTTP {exc.status})"
        was_held = host in self._held.current(now)
        held = self._held.hold(host, reason=reason, seconds=delay, now=now)
        self.stats.held[host] = held
        if self._held.is_lasting(delay) and not was_held:
            log.warning("%s; the crawl goes on with the other hosts", describe([held], now=now))

    async def _ack(self, lease: Lease, *, due: float | None = None) -> None:
        """Mark the lease done, or (``due`` given) queue its URL again for then."""
        if self._checkpointing and self._hold_acks:
            self._held_acks.append((lease, due))
        elif due is None:
            await self._frontier.ack(lease)
        else:
            await self._frontier.revisit(lease, due=due)

    async def _checkpoint(self) -> None:
        """Flush storage, then the frontier, holding acks back meanwhile (see module doc); a
        frontier that seals acks takes them at once and commits only those sealed before."""
        if isinstance(self._frontier, SealsAcks):
            self._frontier.seal_acks()
            await self._storage.flush()
            if self._revisit is not None:
                await self._revisit.flush()
            await self._frontier.flush_sealed()
            return
        self._checkpointing = True
        try:
            await self._storage.flush()
            if self._revisit is not None:
                await self._revisit.flush()
            await self._frontier.flush()
        finally:
            self._checkpointing = False
            held, self._held_acks = self._held_acks, []
            for lease, due in held:
                if due is None:
                    await self._frontier.ack(lease)
                else:
                    await self._frontier.revisit(lease, due=due)
            if held:
                # Workers may all be waiting for these hosts' leases; without a wake-up they
                # would sleep out their poll interval.
                self._wakeup.set()

    async def _last_checkpoint(self) -> None:
        """The checkpoint at the end, tried again for as long as a lock holds the file (a
        crawl must not end on a transient lock, nor leave its last pages unwritten)."""
        pause = self._limits.checkpoint_interval
        while True:
            try:
                await self._checkpoint()
                return
            except (DatabaseLocked, FrontierLocked) as exc:
                log.warning("the last checkpoint waits for a lock (%s); trying again", exc)
                await asyncio.sleep(pause)
                pause = min(2 * pause, 5.0)

    async def _checkpoint_loop(self) -> None:
        while True:
            await asyncio.sleep(self._limits.checkpoint_interval)
            try:
                await self._checkpoint()
                if self._limits.shared_storage and self._limits.max_pages:
                    stored = await self._storage.count_pages()
                    self.stats.pages = max(self.stats.pages, stored)
            except (DatabaseLocked, FrontierLocked) as exc:
                # Another connection (the frontier's or the storage's writer, a user's shell)
                # held the file past its busy timeout: what was not written stays buffered,
                # and the next checkpoint writes it.
                log.warning("checkpoint postponed, the database is locked: %s", exc)
                continue
            except StorageError as exc:
                self._fatal = exc
                log.exception("checkpoint failed, stopping the crawl")
                self.stop()
                return
            if self._on_checkpoint is not None:
                try:
                    async with self._strategy_turn():  # the hook may read the strategy
                        await self._on_checkpoint()
                except Exception:
                    log.exception("the checkpoint hook failed; the crawl goes on")

    async def _sweep_loop(self) -> None:
        while True:
            await asyncio.sleep(self._SWEEP_EVERY)
            await self._renew_in_hand()
            back = await self._frontier.reclaim_expired()
            if back:
                log.warning("%d expired leases went back to the queue", back)
                self._wakeup.set()
