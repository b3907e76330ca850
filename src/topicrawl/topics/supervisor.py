"""Runs each topic's crawler processes under the topic's CPU cap, and keeps their work safe.

Usage (one period of the tracking loop)::

    sup = TopicSupervisor(queue_path="topics.db")
    await sup.start()
    sup.apply(allocate(heats, ...))          # {topic id: TopicAllocation}
    await sup.submit(7, ["https://example.org/a", ...])
    async for result in sup.results():       # TopicResult(topic, page, attempts)
        store(result)
    await sup.close()

Each topic has a queue of URLs in a SQLite file (:mod:`topicrawl.topics.workqueue`) and a
number of crawler processes (:mod:`topicrawl.topics.topic_worker`) that get URLs over a pipe
(at most ``in_flight_per_process`` at a time), fetch and parse them, and send results back.
:meth:`TopicSupervisor.apply` sets every topic's CPU cap and process count for the period:
caps go to the CPU limiter at once (:mod:`topicrawl.topics.cpulimit`); extra processes are
started, surplus ones get no new URLs and are asked to exit after their current ones (killed,
their URLs queued again, if they take longer than ``retire_grace``). A process that dies is
replaced, with a growing pause if it keeps dying at once; its URLs go back to the queue with
an attempt more, and a URL that ``max_attempts`` processes died on is given up (a result with
``error`` set says so).

The supervisor's work (and, with the duty-cycle limiter, the stopping and continuing of the
processes) runs on the caller's event loop: keep that loop responsive, e.g. run clustering or
model training in a thread or process, or caps are enforced late.

Results reach the caller either through :meth:`TopicSupervisor.results` (an async iterator
over a bounded buffer: when nobody reads it, the crawlers pause instead of eating memory) or,
when ``on_result`` is given, by awaiting that callback for each result.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import pickle
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from topicrawl.core.config import FetchSettings
from topicrawl.core.models import ErrorKind
from topicrawl.topics.allocation import TopicAllocation
from topicrawl.topics.cpulimit import CpuLimiter, LimiterKind, choose_limiter
from topicrawl.topics.topic_worker import PageResult, WorkerConfig, encode_frame, read_frame
from topicrawl.topics.workqueue import LeasedUrl, TopicWorkQueue, UrlState

__all__ = ["TopicResult", "TopicSupervisor", "TopicWorkStats", "default_worker_command"]

log = logging.getLogger(__name__)

ResultCallback = Callable[["TopicResult"], Awaitable[None]]
_FAST_CRASH = 2.0  # seconds: a process dying sooner after its start counts as a crash loop


def default_worker_command() -> tuple[str, ...]:
    """``python -m topicrawl.topics.topic_worker`` with this interpreter."""
    return (sys.executable, "-m", "topicrawl.topics.topic_worker")


@dataclass(frozen=True, slots=True)
class TopicResult:
    """One URL of a topic, answered: ``page.error`` is set when it could not be fetched."""

    topic: int
    page: PageResult
    attempts: int


@dataclass(frozen=True, slots=True)
class TopicWorkStats:
    """A topic's crawl right now.

    ``fetched`` counts URLs answered without error, ``errors`` those answered with a fetch
    error, ``failed`` those given up after processes died on them, ``requeued`` hand-outs
    returned to the queue. ``cpu_percent`` is the measured CPU of the topic's processes (percent
    of one core, over the last sampling interval); ``cap`` the CPU cap, None before any
    :meth:`TopicSupervisor.apply`; ``processes`` the live processes, ``target`` how many the
    last allocation asked for.
    """

    fetched: int
    errors: int
    failed: int
    queued: int
    in_flight: int
    requeued: int
    restarts: int
    cpu_percent: float
    cap: float | None
    processes: int
    target: int


@dataclass(slots=True)
class _Job:
    url: str
    attempts: int
    leased_at: float
    answered: bool = False  # its result is on the way to the caller


@dataclass(slots=True, eq=False)
class _Child:
    topic: int
    process: asyncio.subprocess.Process
    started: float
    probe: psutil.Process | None
    jobs: dict[int, _Job] = field(default_factory=dict)
    ready: bool = False
    retiring: bool = False
    retire_deadline: float = math.inf
    stdin_closed: bool = False
    stopped_by_us: bool = False  # its leases do not count against their URLs
    exclusive: bool = False  # works on a suspect URL alone
    reader: asyncio.Task[None] | None = None
    cpu_seen: float = 0.0


@dataclass(slots=True)
class _Topic:
    id: int
    cap: float | None = None
    target: int = 0
    children: list[_Child] = field(default_factory=list)
    fetched: int = 0
    errors: int = 0
    failed: int = 0
    requeued: int = 0
    restarts: int = 0
    cpu_percent: float = 0.0
    limited: tuple[float, frozenset[int]] | None = None
    spawn_after: float = 0.0
    crash_streak: int = 0
    # URLs that were in a process that died with several URLs: which one killed it is
    # unknown, so each is next given to a process alone, where a death is its own fault.
    suspects: set[str] = field(default_factory=set)

    @property
    def group(self) -> str:
        return f"topic-{self.id}"


class TopicSupervisor:
    """Topic crawler processes under per-topic CPU caps, with a persistent work queue.

    Args:
        queue_path: the SQLite file of the per-topic URL queues (kept across runs).
        fetch: fetch settings of the crawler processes.
        obey_robots: crawler processes honour robots.txt (and its Crawl-delay).
        min_host_delay: seconds between requests to one host from one process.
        cpu_limiter: ``auto`` (cgroup, else cpulimit, else the duty cycle), a backend's name,
            or a :class:`~topicrawl.topics.cpulimit.CpuLimiter` to use.
        in_flight_per_process: URLs one process works on at once.
        max_processes: the most processes one topic may have, whatever it is allocated.
        max_attempts: processes that may die on one URL before it is given up.
        lease_timeout: seconds a process may hold a URL before it is killed as hung.
        retire_grace: seconds a surplus process may take to finish its URLs.
        close_grace: seconds :meth:`close` waits for processes to finish their URLs.
        result_buffer: results held for :meth:`results` before the crawlers pause.
        on_result: awaited for each result instead of buffering it for :meth:`results`.
        worker_command: the crawler process's command line (tests inject others).
        cpu_sample_interval: seconds between measurements of each topic's CPU.
        excerpt_chars: characters of page text sent back with each result.
    """

    def __init__(
        self,
        *,
        queue_path: str | Path,
        fetch: FetchSettings | None = None,
        obey_robots: bool = True,
        min_host_delay: float = 0.0,
        cpu_limiter: LimiterKind | CpuLimiter = "auto",
        in_flight_per_process: int = 2,
        max_processes: int = 16,
        max_attempts: int = 3,
        lease_timeout: float = 300.0,
        retire_grace: float = 30.0,
        close_grace: float = 10.0,
        result_buffer: int = 1000,
        on_result: ResultCallback | None = None,
        worker_command: Sequence[str] | None = None,
        cpu_sample_interval: float = 1.0,
        excerpt_chars: int = 2000,
    ) -> None:
        for name, value in (
            ("in_flight_per_process", in_flight_per_process),
            ("max_processes", max_processes),
            ("max_attempts", max_attempts),
            ("result_buffer", result_buffer),
        ):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        self._fetch = fetch if fetch is not None else FetchSettings()
        self._config = WorkerConfig(
            fetch=self._fetch,
            obey_robots=obey_robots,
            min_host_delay=min_host_delay,
            excerpt_chars=excerpt_chars,
        )
        self._queue_path = Path(queue_path)
        self._limiter_choice = cpu_limiter
        self._per_process = in_flight_per_process
        self._max_processes = max_processes
        self._max_attempts = max_attempts
        self._lease_timeout = lease_timeout
        self._retire_grace = retire_grace
        self._close_grace = close_grace
        self._on_result = on_result
        self._command = tuple(worker_command or default_worker_command())
        self._sample_interval = cpu_sample_interval
        self._results: asyncio.Queue[TopicResult | None] = asyncio.Queue(result_buffer)
        self._topics: dict[int, _Topic] = {}
        self._jobs = 0
        self._wake = asyncio.Event()
        self._queue: TopicWorkQueue | None = None
        self._limiter: CpuLimiter | None = None
        self._control: asyncio.Task[None] | None = None
        self._closing = False
        self._last_sample = time.monotonic()
        self._end_marker: asyncio.Task[None] | None = None
        self._closed = False
        self._counts: dict[int, dict[UrlState, int]] = {}

    # ------------------------------------------------------------------ public

    @property
    def limiter_name(self) -> str:
        """The CPU limiter in use (``cgroup``, ``cpulimit`` or ``duty-cycle``)."""
        return self._require_limiter().name

    async def start(self) -> None:
        """Open the queue (leases of an earlier run go back to it) and pick the CPU limiter.

        Raises:
            ConfigError: a forced CPU limiter is not available here.
            StorageError: the queue file cannot be used.
        """
        if self._control is not None:
            raise RuntimeError("the supervisor is already started")
        self._queue = TopicWorkQueue(self._queue_path, max_url_length=self._fetch.max_url_length)
        choice = self._limiter_choice
        self._limiter = choose_limiter(choice) if isinstance(choice, str) else choice
        log.info("topic supervisor: CPU caps enforced by %s", self._limiter.name)
        self._control = asyncio.create_task(self._control_loop(), name="topic supervisor")

    def apply(
        self, allocations: Mapping[int, TopicAllocation] | Iterable[tuple[int, TopicAllocation]]
    ) -> None:
        """Set every topic's CPU cap and process count for this period (takes effect at once).

        ``allocations`` is the full allocation, as :func:`~topicrawl.topics.allocation.allocate`
        returns it: a topic left out keeps its queue but has its processes stopped.

        Raises:
            TypeError: the allocations are not keyed by topic id.
            ValueError: a cap is not a positive number, or a process count is negative.
        """
        self._require_open()
        if isinstance(allocations, Sequence) and any(
            isinstance(item, TopicAllocation) for item in allocations
        ):
            raise TypeError("apply() needs {topic id: TopicAllocation}, as allocate() returns")
        given = dict(allocations)
        for topic_id, allocation in given.items():
            cap = allocation.cpu_cap
            if not math.isfinite(cap) or cap <= 0:
                raise ValueError(f"topic {topic_id}: CPU cap must be > 0, got {cap!r}")
            if allocation.processes < 0:
                raise ValueError(f"topic {topic_id}: processes must be >= 0")
        for topic_id, allocation in given.items():
            topic = self._topic(int(topic_id))
            topic.cap = float(allocation.cpu_cap)
            topic.target = min(allocation.processes, self._max_processes)
        for topic_id, topic in self._topics.items():
            if topic_id not in given:
                topic.target = 0
        self._wake.set()

    async def submit(self, topic_id: int, urls: Sequence[str]) -> int:
        """Queue URLs for a topic; returns how many were new to it (dedupe is per topic)."""
        queue = self._require_open()
        added = queue.add(int(topic_id), urls)
        self._topic(int(topic_id))
        if added:
            self._wake.set()
        return added

    def stats(self) -> dict[int, TopicWorkStats]:
        """Every known topic's work and CPU right now (after :meth:`close`: at closing)."""
        self._require_started()
        if not self._closed:
            self._counts = self._require_started().counts()
        counts = self._counts
        for topic_id in counts:
            self._topic(topic_id)
        return {
            topic.id: TopicWorkStats(
                fetched=topic.fetched,
                errors=topic.errors,
                failed=topic.failed,
                queued=counts.get(topic.id, {}).get(UrlState.QUEUED, 0),
                in_flight=sum(len(c.jobs) for c in topic.children),
                requeued=topic.requeued,
                restarts=topic.restarts,
                cpu_percent=topic.cpu_percent,
                cap=topic.cap,
                processes=sum(1 for c in topic.children if c.process.returncode is None),
                target=topic.target,
            )
            for topic in self._topics.values()
        }

    def pids(self, topic_id: int) -> list[int]:
        """The process ids of a topic's live crawler processes."""
        topic = self._topics.get(topic_id)
        if topic is None:
            return []
        return [c.process.pid for c in topic.children if c.process.returncode is None]

    async def results(self) -> AsyncIterator[TopicResult]:
        """Results as they come; ends when the supervisor is closed.

        Raises:
            RuntimeError: the supervisor was given ``on_result`` (results go there).
        """
        if self._on_result is not None:
            raise RuntimeError("results go to on_result; there is nothing to iterate")
        while True:
            item = await self._results.get()
            if item is None:
                self._results.put_nowait(None)  # let other readers end too
                return
            yield item

    async def join(self, topic_ids: Iterable[int] | None = None, *, poll: float = 0.05) -> None:
        """Wait until the topics (default: all) have nothing queued or in flight.

        A topic with queued URLs and no processes never empties: allocate it processes first.
        """
        queue = self._require_started()
        while True:
            counts = queue.counts()
            wanted = set(topic_ids) if topic_ids is not None else set(counts)
            busy = any(
                counts.get(t, {}).get(UrlState.QUEUED, 0)
                or counts.get(t, {}).get(UrlState.LEASED, 0)
                for t in wanted
            )
            if not busy:
                return
            await asyncio.sleep(poll)

    async def close(self) -> None:
        """Let the processes finish their URLs (up to ``close_grace``), stop them, keep the rest
        of the queue in its file, and end :meth:`results`."""
        if self._control is None or self._closing:
            return
        self._closing = True
        self._wake.set()
        await self._control  # ends at its next wake-up: no cancel to lose inside wait_for
        children = [c for t in self._topics.values() for c in t.children]
        for child in children:
            child.retiring = True
            self._close_stdin(child)
        waits = [c.process.wait() for c in children]
        if waits:
            _, pending = await asyncio.wait(
                [asyncio.ensure_future(w) for w in waits], timeout=self._close_grace
            )
            for future in pending:
                future.cancel()
        for child in children:
            self._kill(child)
        readers = [c.reader for c in children if c.reader is not None]
        if readers:
            # A reader still waiting to hand a result to a full buffer is cancelled: its URL
            # is still leased in the file, so the next run fetches it again.
            _, stuck = await asyncio.wait(readers, timeout=2.0)
            for reader in stuck:
                reader.cancel()
            await asyncio.gather(*readers, return_exceptions=True)
        await self._require_limiter().close()
        self._counts = self._require_started().counts()
        self._require_started().close()
        self._closed = True
        if self._results.full():
            # Nobody is reading now; the end marker waits behind the buffered results.
            self._end_marker = asyncio.create_task(self._results.put(None))
        else:
            self._results.put_nowait(None)

    # ------------------------------------------------------------------ control loop

    async def _control_loop(self) -> None:
        while not self._closing:
            self._wake.clear()
            try:
                await self._reconcile()
            except Exception:  # the boundary: log, and try again on the next tick
                log.exception("topic supervisor: reconcile failed")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.25):
                    await self._wake.wait()

    async def _reconcile(self) -> None:
        now = time.monotonic()
        for topic in list(self._topics.values()):
            await self._scale(topic, now)
            self._police(topic, now)
            self._dispatch(topic, now)
            await self._update_limiter(topic)
        if now - self._last_sample >= self._sample_interval:
            self._sample_cpu(now)

    async def _scale(self, topic: _Topic, now: float) -> None:
        live = [c for c in topic.children if not c.retiring and c.process.returncode is None]
        while len(live) < topic.target and now >= topic.spawn_after:
            child = await self._spawn(topic)
            if child is None:
                break
            live.append(child)
        surplus = len(live) - topic.target
        if surplus > 0:
            # Idle processes go first, then the ones with the least work in hand.
            for child in sorted(live, key=lambda c: (len(c.jobs), -c.started))[:surplus]:
                child.retiring = True
                child.retire_deadline = now + self._retire_grace

    def _police(self, topic: _Topic, now: float) -> None:
        for child in list(topic.children):
            if child.process.returncode is not None:
                continue
            if child.retiring:
                if not child.jobs:
                    self._close_stdin(child)
                if now >= child.retire_deadline:
                    # Its URLs go back to the queue without counting against them.
                    log.info("topic %d: a retiring process overran its grace; killing it", topic.id)
                    self._kill(child)
                continue
            if any(
                now - job.leased_at > self._lease_timeout and not job.answered
                for job in child.jobs.values()
            ):
                log.warning("topic %d: a process held a URL too long; killing it", topic.id)
                self._kill(child, counts_against_urls=True)

    def _dispatch(self, topic: _Topic, now: float) -> None:
        queue = self._require_started()
        for child in topic.children:
            if child.retiring or not child.ready or child.process.returncode is not None:
                continue
            stdin = child.process.stdin
            if stdin is None or stdin.is_closing() or child.exclusive:
                continue
            leased: list[LeasedUrl] = []
            if not child.jobs:
                for url in list(topic.suspects):
                    suspect = queue.lease_url(topic.id, url)
                    if suspect is not None:
                        leased, child.exclusive = [suspect], True
                        break
                    if (queue.state_of(topic.id, url) or (UrlState.DONE, 0))[
                        0
                    ] is not UrlState.LEASED:
                        topic.suspects.discard(url)  # finished or given up meanwhile
            if not leased:
                free = self._per_process - len(child.jobs)
                leased = queue.lease(topic.id, free, exclude=topic.suspects)
            for lease in leased:
                self._jobs += 1
                child.jobs[self._jobs] = _Job(lease.url, lease.attempts, now)
                stdin.write(encode_frame((self._jobs, lease.url)))

    async def _update_limiter(self, topic: _Topic) -> None:
        limiter = self._require_limiter()
        pids = frozenset(c.process.pid for c in topic.children if c.process.returncode is None)
        if topic.cap is None or not pids:
            if topic.limited is not None:
                await limiter.remove_group(topic.group)
                topic.limited = None
            return
        wanted = (topic.cap, pids)
        if topic.limited != wanted:
            await limiter.set_group(topic.group, pids, topic.cap)
            topic.limited = wanted

    def _sample_cpu(self, now: float) -> None:
        elapsed = now - self._last_sample
        self._last_sample = now
        for topic in self._topics.values():
            used = 0.0
            for child in topic.children:
                if child.probe is None:
                    continue
                try:
                    times = child.probe.cpu_times()
                except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
                    continue
                total = times.user + times.system
                used += total - child.cpu_seen
                child.cpu_seen = total
            topic.cpu_percent = 100.0 * used / elapsed if elapsed > 0 else 0.0

    # ------------------------------------------------------------------ processes

    async def _spawn(self, topic: _Topic) -> _Child | None:
        try:
            process = await asyncio.create_subprocess_exec(
                *self._command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            log.warning("topic %d: cannot start a crawler process: %s", topic.id, exc)
            self._back_off(topic)
            return None
        try:
            probe: psutil.Process | None = psutil.Process(process.pid)
        except psutil.NoSuchProcess:
            probe = None
        child = _Child(topic=topic.id, process=process, started=time.monotonic(), probe=probe)
        assert process.stdin is not None
        process.stdin.write(encode_frame(self._config))
        topic.children.append(child)
        child.reader = asyncio.create_task(self._read(topic, child), name=f"topic {topic.id} pipe")
        return child

    def _back_off(self, topic: _Topic) -> None:
        topic.crash_streak += 1
        topic.spawn_after = time.monotonic() + min(5.0, 0.1 * 2.0**topic.crash_streak)

    def _close_stdin(self, child: _Child) -> None:
        if child.stdin_closed or child.process.stdin is None:
            return
        child.stdin_closed = True
        child.process.stdin.close()

    def _kill(self, child: _Child, *, counts_against_urls: bool = False) -> None:
        if child.process.returncode is not None:
            return
        child.stopped_by_us = not counts_against_urls
        with contextlib.suppress(ProcessLookupError):
            child.process.kill()

    async def _read(self, topic: _Topic, child: _Child) -> None:
        stdout = child.process.stdout
        assert stdout is not None
        try:
            while (message := await read_frame(stdout)) is not None:
                await self._on_message(topic, child, message)
        except ConnectionError:
            pass  # the process ended
        except (pickle.UnpicklingError, ValueError, TypeError, EOFError) as exc:
            log.warning("topic %d: a crawler process sent garbage (%s); killing it", topic.id, exc)
            self._kill(child, counts_against_urls=True)
        finally:
            await self._exited(topic, child)

    async def _on_message(self, topic: _Topic, child: _Child, message: object) -> None:
        if not isinstance(message, tuple) or not message:
            raise TypeError(f"unexpected message {type(message).__name__}")
        if message[0] == "ready":
            child.ready = True
            topic.crash_streak = 0
        elif message[0] == "done" and len(message) == 3 and isinstance(message[2], PageResult):
            job = child.jobs.get(int(message[1]))
            if job is None:
                return
            page: PageResult = message[2]
            job.answered = True
            await self._deliver(topic, TopicResult(topic.id, page, job.attempts), job.url)
            child.jobs.pop(int(message[1]), None)
            topic.suspects.discard(job.url)
            child.exclusive = child.exclusive and bool(child.jobs)
        else:
            raise TypeError(f"unexpected message {message[0]!r}")
        self._wake.set()

    async def _deliver(self, topic: _Topic, result: TopicResult, url: str) -> None:
        queue = self._require_started()
        if self._on_result is not None:
            try:
                await self._on_result(result)
            except Exception:  # the caller's code: report, and keep the crawl going
                log.exception("topic %d: on_result failed for %s", topic.id, url)
        elif self._closing and self._results.full():
            # Nobody is reading and we are closing: keep the URL for the next run instead.
            queue.give_back(
                topic.id, url, count_attempt=False, max_attempts=self._max_attempts, reason=""
            )
            topic.requeued += 1
            return
        else:
            await self._results.put(result)
        queue.finish(topic.id, url, error=result.page.error)
        if result.page.error is None:
            topic.fetched += 1
        else:
            topic.errors += 1

    async def _emit_failure(self, topic: _Topic, result: TopicResult) -> None:
        """Tell the caller a URL was given up (the queue file records it either way)."""
        if self._on_result is not None:
            try:
                await self._on_result(result)
            except Exception:  # the caller's code: report, and keep the crawl going
                log.exception("topic %d: on_result failed for %s", topic.id, result.page.url)
        elif not self._results.full():
            self._results.put_nowait(result)
        else:
            log.warning("topic %d: result buffer full; %s given up", topic.id, result.page.url)

    async def _exited(self, topic: _Topic, child: _Child) -> None:
        code = await child.process.wait()
        if child in topic.children:
            topic.children.remove(child)
        queue = self._require_started()
        # A death counts against a URL only when the URL was alone in the process.
        blame = not child.stopped_by_us and len(child.jobs) == 1
        for job in child.jobs.values():
            if not child.stopped_by_us and not blame:
                topic.suspects.add(job.url)
            state = queue.give_back(
                topic.id,
                job.url,
                count_attempt=blame,
                max_attempts=self._max_attempts,
                reason=f"crawler processes died on it {self._max_attempts} times",
            )
            if state is UrlState.FAILED:
                topic.failed += 1
                topic.suspects.discard(job.url)
                page = PageResult(
                    url=job.url,
                    final_url=job.url,
                    status=0,
                    error=f"crawler processes died on it {job.attempts} times",
                    error_kind=ErrorKind.OTHER.value,
                )
                await self._emit_failure(topic, TopicResult(topic.id, page, job.attempts))
            else:
                topic.requeued += 1
        child.jobs.clear()
        if not (child.retiring or child.stopped_by_us or self._closing):
            topic.restarts += 1
            log.warning(
                "topic %d: a crawler process exited with code %s; replacing it", topic.id, code
            )
            if time.monotonic() - child.started < _FAST_CRASH:
                self._back_off(topic)
        self._wake.set()

    # ------------------------------------------------------------------ helpers

    def _topic(self, topic_id: int) -> _Topic:
        topic = self._topics.get(topic_id)
        if topic is None:
            topic = self._topics[topic_id] = _Topic(id=topic_id)
        return topic

    def _require_started(self) -> TopicWorkQueue:
        if self._queue is None:
            raise RuntimeError("call `await supervisor.start()` first")
        return self._queue

    def _require_open(self) -> TopicWorkQueue:
        if self._closing:
            raise RuntimeError("the supervisor is closed")
        return self._require_started()

    def _require_limiter(self) -> CpuLimiter:
        if self._limiter is None:
            raise RuntimeError("call `await supervisor.start()` first")
        return self._limiter
