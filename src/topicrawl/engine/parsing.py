"""Parsing fetched HTML off the event loop, in worker processes when the machine has cores.

HTML parsing (with decoding and hashing) is the largest CPU cost of a fast crawl, so with a
spare core it runs in worker processes and the event loop keeps fetching.

The workers are plain subprocesses (``python -m topicrawl.parse.worker``) talking over pipes
the event loop reads directly: no helper threads, many pages in flight per worker, no
inherited file descriptors or locks, no re-import of the user's ``__main__``, and only the
parsing stack imported. Bodies go to the workers as bytes (the worker decodes them), so the
event loop never holds a decoded copy of a page.

Two limits keep this safe:

- a byte budget on the bodies queued to the workers (``max_pending_bytes``): when the
  workers fall behind, callers wait instead of piling pages up in pipe buffers;
- a time limit per page (``timeout``) in CPU seconds, measured by the worker itself (a
  ``SIGPROF`` interval timer, POSIX): hostile markup can make the HTML parser quadratic;
  such a page's worker ends, the page fails as a parse error, and the worker's other pages
  are parsed again by a fresh worker, so nothing else is lost. CPU time, not wall time: on a
  loaded machine (load 17 on 2 cores) a page may wait 30 s for the CPU while using a few
  milliseconds of it, and a wall-clock limit then killed and restarted the workers in a loop.
  Wall time still bounds a page, at ``timeout`` x :data:`WALL_FACTOR` counted from when the
  worker starts that page (not from when it was queued), in case a worker hangs without
  using the CPU; where the worker cannot time itself, wall time at ``timeout`` is the limit.

Head-of-line blocking: a worker answers in order, and a page of megabytes (an index with
thousands of links) keeps it busy for a tenth of a second, while the small pages queued
behind it hold the crawl's slots. So while every worker is on a page of ``big_page_bytes`` or
more, a page of at most ``inline_max_bytes`` is parsed on the event loop instead: about a
millisecond of a loop that would otherwise wait. (Parsing inline whenever the workers merely
have a backlog was tried: it moves the parsing of a CPU-bound crawl onto the event loop, and
the Java docs crawl got slower, ~790 instead of ~890 pages/s.) The cap bounds what hostile
markup can cost there, with no time limit on the event loop: at 32 KB, 22 ms for the
quadratic unclosed-inline pattern and 47 ms for 6,500 nested divs (at 64 KB: 100 and 192 ms,
which is why the cap is 32 KB; the crawl was as fast either way).

Given the strategy's text analyzer, each worker also counts the terms of every page it
parses (see :class:`topicrawl.core.protocols.TextAnalyzer`): for a focused crawl that is
half the strategy's cost per page, otherwise paid on the event loop. A page parsed on the
event loop comes without counts (the strategy counts it there, as it would anyway).

Given the crawl's parser library (:class:`topicrawl.parse.methods.ParserLibrary`), each page a
schema applies to goes to its worker with the library's hint for its URL pattern, the worker
runs the extraction methods, and the outcome comes back here, where the library learns from
it (``ParsedDocument.extraction``). Pages no schema applies to go as before.

A worker that dies by itself, or answers with a frame that cannot be read, is replaced the
same way. Only the page it was working on is suspect: a page that was at the head of two
workers that died fails as a parse error; pages merely queued behind it are never failed
for that.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import pickle
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from topicrawl.core.models import Response
from topicrawl.core.protocols import TextAnalyzer
from topicrawl.parse.methods.extract import Hint
from topicrawl.parse.methods.library import ParserLibrary
from topicrawl.parse.worker import (
    CPU_LIMITED,
    EntityAnalyzer,
    ParsedDocument,
    analyzer_frame,
    budget_frame,
    entities_frame,
    parse_body,
    parsers_frame,
    request_frame,
    unpack,
)

__all__ = ["PageParser", "ParsedDocument", "default_parse_workers", "parse_body"]

log = logging.getLogger(__name__)

_SIGPROF = int(getattr(signal, "SIGPROF", 0)) or -1  # -1: no such signal, no such exit code

_HEADER_SIZE = 4

WALL_FACTOR = 10.0
"""Where workers time their pages' CPU, the wall-clock limit on a page is this many times
``timeout``: a guard against a worker that hangs without using the CPU."""


def default_parse_workers() -> int:
    """One worker per core beyond the first (the event loop's), at most 4; 0 on one core."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(0, min((cores or 1) - 1, 4))


@dataclass(slots=True)
class _Job:
    url: str
    body: bytes | str
    charset: str | None
    future: asyncio.Future[ParsedDocument]
    hint: Hint | None = None
    # Workers that died (not killed by the time limit) while parsing this page.
    deaths: int = 0

    @property
    def size(self) -> int:
        return len(self.body)


@dataclass(slots=True)
class _Worker:
    process: asyncio.subprocess.Process
    # In submission order: a worker answers in that order, so the first is the one it is on.
    pending: dict[int, _Job] = field(default_factory=dict)
    # When the worker started on its first pending page (its previous answer, or the submit).
    head_since: float = 0.0
    reader: asyncio.Task[None] | None = None
    # Killed for a page over the time limit (already failed and removed from ``pending``).
    killed: bool = False


class PageParser:
    """Parses responses inline (``workers=0``) or in worker processes.

    Args:
        workers: worker processes; 0 parses on the event loop's thread.
        command: the worker program (default: this Python running ``topicrawl.parse.worker``);
            it answers length-prefixed pickled frames as :func:`topicrawl.parse.worker.serve`.
        timeout: CPU seconds one page may take in a worker before the worker is ended (wall
            seconds where the worker cannot time itself).
        max_pending_bytes: body bytes queued to the workers at most; a body larger than this
            is still parsed, alone.
        inline_max_bytes: the largest body parsed on the event loop while every worker is on
            a big page (0: never).
        big_page_bytes: the body size from which a page counts as big.
        analyzer: counts each page's terms in the workers (``ParsedDocument.terms``).
        entities: finds each page's entities and relations (``ParsedDocument.entities``), in
            the workers, or here when pages are parsed here.
        library: the parser library: pages its schemas apply to get their records extracted
            (``ParsedDocument.extraction``), and the library learns from each outcome.
    """

    def __init__(
        self,
        *,
        workers: int,
        timeout: float = 30.0,
        max_pending_bytes: int = 16_000_000,
        inline_max_bytes: int = 32_768,
        big_page_bytes: int = 500_000,
        command: Sequence[str] | None = None,
        analyzer: TextAnalyzer | None = None,
        entities: EntityAnalyzer | None = None,
        library: ParserLibrary | None = None,
    ) -> None:
        if workers < 0:
            raise ValueError(f"workers must be >= 0, got {workers}")
        self._size = workers
        self._command = (
            tuple(command) if command else (sys.executable, "-m", "topicrawl.parse.worker")
        )
        self._timeout = timeout
        self._wall_limit = timeout * WALL_FACTOR if CPU_LIMITED else timeout
        self._budget_frame = budget_frame(timeout) if CPU_LIMITED and workers else None
        self._budget = max_pending_bytes
        self._inline_max = inline_max_bytes
        self._big_page = big_page_bytes
        # Pickled once here, so an analyzer that cannot be pickled fails the crawl's set-up.
        self._analyzer = analyzer_frame(analyzer) if analyzer is not None and workers else None
        self._entities = entities
        self._entities_frame = (
            entities_frame(entities) if entities is not None and workers else None
        )
        self._library = library if library is not None and library.config.schemas else None
        self._parsers_frame = (
            parsers_frame(self._library.config) if self._library is not None and workers else None
        )
        self.parsed_inline = 0  # pages parsed on the event loop while the workers were blocked
        self.restarts = 0  # workers started to replace one that ended
        self._pending_bytes = 0
        self._room = asyncio.Condition()
        self._workers: list[_Worker] = []
        self._retired: list[_Worker] = []  # replaced, their reader still finishing
        self._jobs = itertools.count()
        self._starting = asyncio.Lock() if workers else None

    async def start(self) -> None:
        """Start the workers now rather than on the first page: a worker's interpreter takes
        ~0.1 s to import the parsing stack, which then overlaps the crawl's own start-up (the
        database, robots.txt, the first fetch) instead of delaying the first parse."""
        if self._size:
            await self._least_busy()

    @property
    def pending_bytes(self) -> int:
        """Body bytes queued to the workers and not yet answered."""
        return self._pending_bytes

    async def __call__(self, response: Response) -> ParsedDocument:
        """Parse a response.

        Raises:
            ValueError: the page could not be parsed (or took longer than the timeout).
        """
        body: bytes | str = response.text if response.text is not None else response.body
        size = len(body)
        library = self._library
        hint = library.hint_for(response.final_url) if library is not None else None
        document = await self._parse(response, body, size, hint)
        if hint is not None and document.extraction is not None:
            assert library is not None
            library.learn(document.extraction, response.final_url)
        return document

    async def _parse(
        self, response: Response, body: bytes | str, size: int, hint: Hint | None
    ) -> ParsedDocument:
        inline = self._size == 0
        if not inline and size <= self._inline_max and self._workers_blocked():
            inline = True
            self.parsed_inline += 1
        if inline:
            return parse_body(
                body,
                response.final_url,
                charset=response.charset,
                entity_analyzer=self._entities,
                parsers=self._library.config if self._library is not None else None,
                hint=hint,
            )
        async with self._room:
            await self._room.wait_for(
                lambda: self._pending_bytes == 0 or self._pending_bytes + size <= self._budget
            )
            self._pending_bytes += size
        try:
            return await self._parse_in_worker(response.final_url, body, response.charset, hint)
        finally:
            async with self._room:
                self._pending_bytes -= size
                self._room.notify_all()

    async def _parse_in_worker(
        self, url: str, body: bytes | str, charset: str | None, hint: Hint | None
    ) -> ParsedDocument:
        worker = await self._least_busy()
        job = next(self._jobs)
        future: asyncio.Future[ParsedDocument] = asyncio.get_running_loop().create_future()
        self._submit(worker, job, _Job(url, body, charset, future, hint=hint))
        del body
        limit = self._wall_limit
        waited_for = limit
        while True:
            done, _ = await asyncio.wait({future}, timeout=waited_for)
            if done:
                return future.result()
            worker = self._holder(job) or worker
            if next(iter(worker.pending), None) != job:
                waited_for = limit  # still queued behind other pages
                continue
            running = time.monotonic() - worker.head_since
            if running < limit:
                waited_for = limit - running
                continue
            log.warning("parsing %s took %.0f s; killing its worker", url, running)
            worker.pending.pop(job, None)
            worker.killed = True
            with contextlib.suppress(ProcessLookupError):
                worker.process.kill()
            future.cancel()
            raise ValueError(f"parsing took longer than {limit:.0f} s")

    def _workers_blocked(self) -> bool:
        """Whether every worker is on a page of at least ``big_page_bytes``."""
        workers = self._workers
        big = self._big_page
        for worker in workers:
            head = next(iter(worker.pending.values()), None)
            if head is None or len(head.body) < big:
                return False
        return bool(workers)

    def _holder(self, job: int) -> _Worker | None:
        """The worker a job is queued on now (it moves when its first worker dies)."""
        return next((w for w in self._workers if job in w.pending), None)

    async def _least_busy(self) -> _Worker:
        assert self._starting is not None
        async with self._starting:
            alive = [w for w in self._workers if w.process.returncode is None and not w.killed]
            self.restarts += len(self._workers) - len(alive)
            self._retired = [w for w in self._retired if w.reader and not w.reader.done()]
            self._retired += [w for w in self._workers if w not in alive]
            self._workers = alive
            while len(self._workers) < self._size:
                self._workers.append(await self._start())
        return min(self._workers, key=lambda w: len(w.pending))

    async def _start(self) -> _Worker:
        process = await asyncio.create_subprocess_exec(
            *self._command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        worker = _Worker(process=process)
        worker.reader = asyncio.create_task(self._read(worker))
        frames = (self._budget_frame, self._analyzer, self._entities_frame, self._parsers_frame)
        for frame in frames:
            if frame is not None:
                assert process.stdin is not None
                process.stdin.writelines(frame)
        return worker

    def _submit(self, worker: _Worker, job: int, entry: _Job) -> None:
        assert worker.process.stdin is not None
        if not worker.pending:
            worker.head_since = time.monotonic()
        worker.pending[job] = entry
        head, body = request_frame(job, entry.url, entry.body, entry.charset, entry.hint)
        worker.process.stdin.write(head)
        worker.process.stdin.write(body)

    async def _read(self, worker: _Worker) -> None:
        stdout = worker.process.stdout
        assert stdout is not None
        try:
            while True:
                header = await stdout.readexactly(_HEADER_SIZE)
                payload = await stdout.readexactly(int.from_bytes(header, "big"))
                try:
                    job, ok, result = pickle.loads(payload)  # noqa: S301 - our own worker
                    document = unpack(result) if ok else None
                except Exception:  # any unreadable frame has the same remedy
                    log.exception(
                        "parse worker %s sent an unreadable reply; replacing it", worker.process.pid
                    )
                    with contextlib.suppress(ProcessLookupError):
                        worker.process.kill()
                    break
                worker.head_since = time.monotonic()
                entry = worker.pending.pop(job, None)
                if entry is None or entry.future.done():
                    continue
                if document is not None:
                    entry.future.set_result(document)
                else:
                    entry.future.set_exception(ValueError(result))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        await self._rescue(worker)

    async def _rescue(self, worker: _Worker) -> None:
        """A worker ended: hand its unfinished pages to a fresh worker."""
        await worker.process.wait()
        orphans = list(worker.pending.items())
        worker.pending.clear()
        if not orphans:
            return
        log.warning(
            "a parse worker exited (code %s); %d pages go to a new worker",
            worker.process.returncode,
            len(orphans),
        )
        over_budget = worker.process.returncode == -_SIGPROF
        if over_budget:
            # Its own CPU timer ended it: the page it was on is over the budget, and only it.
            _job, head = orphans.pop(0)
            if not head.future.done():
                log.warning("parsing %s took more than %.0f s of CPU", head.url, self._timeout)
                head.future.set_exception(
                    ValueError(f"parsing took longer than {self._timeout:.0f} s of CPU time")
                )
        elif not worker.killed:
            # It died by itself: the page it was working on may be what kills it.
            orphans[0][1].deaths += 1
        for job, entry in orphans:
            if entry.future.done():
                continue
            if self._size == 0:
                entry.future.set_exception(ValueError("the parser was closed"))
                continue
            if entry.deaths >= 2:
                # At the head of two workers that died: this page is what kills them.
                entry.future.set_exception(ValueError("the parse worker died on this page"))
                continue
            self._submit(await self._least_busy(), job, entry)

    async def close(self) -> None:
        """Stop the workers (their pending pages, if any, fail)."""
        workers, self._workers = self._workers + self._retired, []
        self._retired = []
        self._size = 0
        for worker in workers:
            if worker.process.stdin is not None:
                worker.process.stdin.close()
        for worker in workers:
            try:
                await asyncio.wait_for(worker.process.wait(), 5.0)
            except TimeoutError:
                worker.process.kill()
                await worker.process.wait()
            if worker.reader is not None:
                worker.reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await worker.reader
            for entry in worker.pending.values():
                if not entry.future.done():
                    entry.future.set_exception(ValueError("the parser was closed"))
