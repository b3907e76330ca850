"""Revisits in the crawl loop: conditional requests, change detection, due times, history.

A ``--revisit`` crawl does not mark a fetched page done: it queues it again in the frontier
with a due time (``Frontier.revisit``), so the crawl stays alive and fetches it again when it
is due. :class:`RevisitControl` decides that time and keeps what each page showed:

- conditional requests: the last ``ETag`` and ``Last-Modified`` go back as ``If-None-Match``
  and ``If-Modified-Since``; a ``304 Not Modified`` counts as unchanged (nothing re-parsed or
  stored but the fetch itself);
- change detection by the hash of the extracted text (markup or ad churn is no change);
- each page's change rate, estimated from its incomplete change history (Cho and
  Garcia-Molina's maximum-likelihood estimator, :mod:`topicrawl.revisit.estimate`);
- due times: until a page has been seen ``learn_visits`` times, every tier-1 period; then the
  freshness-optimal frequencies for the fetch budget over every known page (Cho and
  Garcia-Molina, :mod:`topicrawl.revisit.refresh`), recomputed every tier-1 period, shown
  to the user as the nearest tier (1, 3, 7 days; ``round_to_tiers`` schedules at it); or,
  in ``tiers`` mode, each page's tier by popularity (:mod:`topicrawl.revisit.tiers`),
  recomputed every ``recompute_period``;
- every fetch appended to ``page_history`` (written at the crawl's checkpoints, before the
  frontier makes the due times durable), so a resumed crawl rebuilds each page's history.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from topicrawl.core.config import RevisitSettings
from topicrawl.core.models import Request, Response
from topicrawl.core.protocols import Fetcher
from topicrawl.revisit.estimate import ChangeHistory
from topicrawl.revisit.tiers import TierPolicy, assign_tiers, period_of, tier_of_period
from topicrawl.storage.history import FetchRecord, PageHistory

__all__ = ["ConditionalFetcher", "RevisitControl", "RevisitMode", "open_revisit"]

log = logging.getLogger(__name__)

RevisitMode = Literal["change-rate", "tiers"]


@runtime_checkable
class ConditionalFetcher(Protocol):
    """A fetcher that can send extra headers (the validators of a conditional request)."""

    async def fetch(
        self, request: Request, *, headers: Mapping[str, str] | None = None
    ) -> Response: ...


@dataclass
class _Page:
    last_fetch: float
    content_hash: str | None
    etag: str | None
    last_modified: str | None
    history: ChangeHistory = field(default_factory=ChangeHistory)


class RevisitControl:
    """Decides when each fetched page is due again and records every fetch.

    Args:
        policy: the tiers' periods (seconds; a demo shortens the day) and recompute period.
        mode: ``change-rate`` (budget-aware, the default) or ``tiers`` (by popularity).
        budget: fetches per day for revisits (change-rate mode); ``None``: every known page
            once per tier-2 period on average. No page waits longer than four tier-3 periods.
        round_to_tiers: schedule at the nearest tier's period instead of each page's optimal
            interval (:meth:`tier` shows the user the nearest tier either way).
        popularity: a page's importance (weights the change-rate policy, sets the tiers);
            ``None``: the relevance the strategy gave the page when fetched (1 without one).
        history: where every fetch is appended; ``None`` keeps nothing.
        run_id: the run the history rows belong to.
        learn_visits: fetches of a page at the tier-1 period before its estimate is used.
        clock: seconds since the epoch.
    """

    def __init__(
        self,
        *,
        policy: TierPolicy,
        mode: RevisitMode = "change-rate",
        budget: float | None = None,
        round_to_tiers: bool = False,
        popularity: Callable[[str], float] | None = None,
        history: PageHistory | None = None,
        run_id: int | None = None,
        learn_visits: int = 3,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if budget is not None and not budget > 0:
            raise ValueError(f"revisit budget must be positive, got {budget}")
        self.policy = policy
        self._mode = mode
        self._budget = budget
        self._round = round_to_tiers
        self._popularity = popularity
        self._history = history
        self._run_id = run_id
        self._learn = learn_visits
        self._clock = clock
        self._pages: dict[str, _Page] = {}
        self._relevance: dict[str, float] = {}
        self._intervals: dict[str, float] = {}
        self._planned_at = -math.inf
        self._pending: list[FetchRecord] = []
        self.changes = 0
        self.unchanged = 0
        self.not_modified = 0

    # -- state

    async def load(self) -> int:
        """Rebuild every page's change history from the stored fetches; returns how many."""
        if self._history is None:
            return 0
        async for record in self._history.all_rows():
            self._remember(record)
        return len(self._pages)

    def _remember(self, record: FetchRecord) -> None:
        page = self._pages.get(record.url)
        if page is None:
            self._pages[record.url] = _Page(
                record.fetched_at, record.content_hash, record.etag, record.last_modified
            )
            return
        interval = (record.fetched_at - page.last_fetch) / self._day
        page.history = page.history.seen(interval, changed=record.changed)
        page.last_fetch = record.fetched_at
        if record.status != 304:
            page.content_hash = record.content_hash
        page.etag = record.etag or page.etag
        page.last_modified = record.last_modified or page.last_modified

    @property
    def _day(self) -> float:
        return self.policy.periods[0]

    def known(self, url: str) -> bool:
        """Whether the page was fetched before (in this crawl or a resumed one)."""
        return url in self._pages

    def rate(self, url: str) -> float:
        """The page's estimated changes per (possibly simulated) day; 0 when unknown."""
        page = self._pages.get(url)
        return 0.0 if page is None else page.history.rate()

    # -- the crawl loop's calls

    def headers(self, url: str) -> dict[str, str]:
        """The validators to send with a fetch of ``url`` (empty when it was never fetched)."""
        page = self._pages.get(url)
        headers: dict[str, str] = {}
        if page is not None:
            if page.etag:
                headers["If-None-Match"] = page.etag
            if page.last_modified:
                headers["If-Modified-Since"] = page.last_modified
        return headers

    async def fetch(self, fetcher: Fetcher, request: Request) -> Response:
        """Fetch ``request``, conditionally when the fetcher can send the validators."""
        headers = self.headers(request.url)
        if headers and isinstance(fetcher, ConditionalFetcher):
            return await fetcher.fetch(request, headers=headers)
        return await fetcher.fetch(request)

    def observe(
        self, response: Response, content_hash: str | None, *, relevance: float | None = None
    ) -> float:
        """Record a fetch of ``response.url`` and return when it is due again (epoch seconds).

        ``content_hash`` is the hash of the extracted text (ignored for a 304); ``relevance``
        the strategy's judgement of the page (its importance when no popularity is given).
        """
        if relevance is not None and math.isfinite(relevance):
            self._relevance[response.url] = max(relevance, 0.0)
        url, now = response.url, self._clock()
        page = self._pages.get(url)
        not_modified = response.status == 304
        if page is None:
            changed = True
            page = self._pages[url] = _Page(now, content_hash, None, None)
        else:
            changed = not not_modified and content_hash != page.content_hash
            interval = (now - page.last_fetch) / self._day
            page.history = page.history.seen(interval, changed=changed)
            page.last_fetch = now
            if not not_modified:
                page.content_hash = content_hash
        page.etag = response.headers.get("ETag") or page.etag
        page.last_modified = response.headers.get("Last-Modified") or page.last_modified
        self.not_modified += not_modified
        if page.history.visits:
            self.changes += changed
            self.unchanged += not changed
        due = now + self.interval(url, now)
        self._pending.append(
            FetchRecord(
                url=url,
                fetched_at=now,
                status=response.status,
                changed=changed,
                content_hash=page.content_hash,
                etag=page.etag,
                last_modified=page.last_modified,
                rate=page.history.rate(),
                due_at=due,
                run_id=self._run_id,
            )
        )
        return due

    def after_failure(self, url: str) -> float | None:
        """When a known page whose fetch failed is due again; ``None`` for a page never fetched
        (its failure is final, as in a crawl without revisits)."""
        if url not in self._pages:
            return None
        now = self._clock()
        return now + self.interval(url, now)

    async def flush(self) -> None:
        """Write the fetches recorded since the last flush (the crawl's checkpoint)."""
        if self._history is None:
            self._pending.clear()
            return
        pending, self._pending = self._pending, []
        try:
            await self._history.append(pending)
        except BaseException:
            self._pending[:0] = pending  # the crawl stops on a storage error; kept till then
            raise

    # -- due times

    def interval(self, url: str, now: float) -> float:
        """Seconds until ``url`` is due again."""
        if now - self._planned_at >= self._replan_every():
            self._plan(now)
        page = self._pages.get(url)
        if self._mode == "change-rate" and (page is None or page.history.visits < self._learn):
            return period_of(1, self.policy)
        planned = self._intervals.get(url)
        return planned if planned is not None else period_of(1, self.policy)

    def tier(self, url: str) -> int:
        """The tier a user sees for ``url`` (the nearest tier to its interval)."""
        return tier_of_period(self.interval(url, self._clock()), self.policy)

    def _replan_every(self) -> float:
        return self.policy.recompute_period if self._mode == "tiers" else self._day

    def _weight(self, url: str) -> float:
        if self._popularity is not None:
            return max(self._popularity(url), 0.0)
        return self._relevance.get(url, 1.0)

    def _plan(self, now: float) -> None:
        self._planned_at = now
        urls = list(self._pages)
        if not urls:
            return
        if self._mode == "tiers":
            tiers = assign_tiers({u: self._weight(u) for u in urls}, self.policy)
            self._intervals = {u: period_of(t, self.policy) for u, t in tiers.items()}
            return
        from topicrawl.revisit.refresh import (  # noqa: PLC0415 - numpy
            planned_intervals,
            planning_rate,
        )

        prior = self.policy.periods[1] / self._day
        rates = [planning_rate(self._pages[u].history, prior=prior) for u in urls]
        budget = self._budget or len(urls) / prior
        weights = [self._weight(u) for u in urls]
        found = planned_intervals(
            rates, weights, budget, self.policy, day=self._day, round_to_tiers=self._round
        )
        self._intervals = dict(zip(urls, found, strict=True))
        log.debug("revisit plan for %d pages, budget %.1f a day", len(urls), budget)


async def open_revisit(
    stack: contextlib.AsyncExitStack, settings: RevisitSettings, storage_url: str, run_id: int
) -> RevisitControl | None:
    """The crawl's revisit control from its settings (``None`` when revisits are off), its
    pages' change histories loaded from the database (which storage has already migrated)."""
    if not settings.enabled:
        return None
    history = await stack.enter_async_context(PageHistory(storage_url))
    control = RevisitControl(
        policy=TierPolicy.in_days(
            periods_days=settings.periods_days,
            recompute_days=settings.recompute_days,
            day_seconds=settings.day_seconds,
        ),
        mode=settings.mode,
        budget=settings.budget,
        round_to_tiers=settings.round_to_tiers,
        history=history,
        run_id=run_id,
    )
    loaded = await control.load()
    if loaded:
        log.info("revisits: the change histories of %d pages loaded", loaded)
    return control
