"""Parsing fetched HTML off the event loop, in worker processes when the machine has cores.

HTML parsing is the largest CPU cost of a fast crawl (about 2.5 ms a page of real
documentation, against about 3 ms for everything else a page costs), so with a spare core it
runs in worker processes and the event loop keeps fetching.

The workers are plain subprocesses (``python -m topicrawl.engine.parse_worker``) talking over
pipes the event loop reads directly: no helper threads, many pages in flight per worker, no
inherited file descriptors or locks, and no re-import of the user's ``__main__``. A page that
takes longer than ``timeout`` (hostile markup can make the HTML parser quadratic) gets its
worker killed; that page fails as a parse error and the worker's other pages are parsed again
by a fresh worker, so nothing else is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import pickle
import sys
from dataclasses import dataclass, field

from topicrawl.core.models import ParsedPage, Response
from topicrawl.parse.content import content_hash
from topicrawl.parse.html import parse_html

__all__ = ["PageParser", "ParsedDocument", "default_parse_workers", "parse_document"]

log = logging.getLogger(__name__)

ParsedDocument = tuple[ParsedPage, str | None]
_HEADER_SIZE = 4


def parse_document(html: str, url: str) -> ParsedDocument:
    """Parse one HTML document and hash its text."""
    parsed = parse_html(html, url=url)
    return parsed, content_hash(parsed.text) if parsed.text else None


def default_parse_workers() -> int:
    """One worker per core beyond the first (the event loop's), at most 4; 0 on one core."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(0, min((cores or 1) - 1, 4))


@dataclass(slots=True)
class _Job:
    html: str
    url: str
    future: asyncio.Future[ParsedDocument]
    attempts: int = 0


@dataclass(slots=True)
class _Worker:
    process: asyncio.subprocess.Process
    pending: dict[int, _Job] = field(default_factory=dict)
    reader: asyncio.Task[None] | None = None
    killed: bool = False


class PageParser:
    """Parses responses inline (``workers=0``) or in worker processes.

    Args:
        workers: worker processes; 0 parses on the event loop's thread.
        timeout: seconds one page may take in a worker before the worker is killed.
    """

    def __init__(self, *, workers: int, timeout: float = 30.0) -> None:
        if workers < 0:
            raise ValueError(f"workers must be >= 0, got {workers}")
        self._size = workers
        self._timeout = timeout
        self._workers: list[_Worker] = []
        self._jobs = itertools.count()
        self._starting = asyncio.Lock() if workers else None

    async def __call__(self, response: Response) -> ParsedDocument:
        """Parse a response.

        Raises:
            ValueError: the page could not be parsed (or took longer than the timeout).
        """
        html = response.text or ""
        if self._size == 0:
            return parse_document(html, response.final_url)
        worker = await self._least_busy()
        job = next(self._jobs)
        future: asyncio.Future[ParsedDocument] = asyncio.get_running_loop().create_future()
        self._submit(worker, job, _Job(html, response.final_url, future))
        try:
            return await asyncio.wait_for(asyncio.shield(future), self._timeout)
        except TimeoutError:
            log.warning("parsing %s took too long; killing its worker", response.final_url)
            worker.pending.pop(job, None)
            worker.killed = True
            with contextlib.suppress(ProcessLookupError):
                worker.process.kill()
            raise ValueError(f"parsing took longer than {self._timeout:.0f} s") from None

    async def _least_busy(self) -> _Worker:
        assert self._starting is not None
        async with self._starting:
            self._workers = [
                w for w in self._workers if w.process.returncode is None and not w.killed
            ]
            while len(self._workers) < self._size:
                self._workers.append(await self._start())
        return min(self._workers, key=lambda w: len(w.pending))

    async def _start(self) -> _Worker:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "topicrawl.engine.parse_worker",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        worker = _Worker(process=process)
        worker.reader = asyncio.create_task(self._read(worker))
        return worker

    def _submit(self, worker: _Worker, job: int, entry: _Job) -> None:
        assert worker.process.stdin is not None
        entry.attempts += 1
        worker.pending[job] = entry
        payload = pickle.dumps((job, entry.html, entry.url), protocol=pickle.HIGHEST_PROTOCOL)
        worker.process.stdin.write(len(payload).to_bytes(_HEADER_SIZE, "big") + payload)

    async def _read(self, worker: _Worker) -> None:
        stdout = worker.process.stdout
        assert stdout is not None
        try:
            while True:
                header = await stdout.readexactly(_HEADER_SIZE)
                payload = await stdout.readexactly(int.from_bytes(header, "big"))
                job, ok, result = pickle.loads(payload)  # noqa: S301 - our own worker wrote it
                entry = worker.pending.pop(job, None)
                if entry is None or entry.future.done():
                    continue
                if ok:
                    entry.future.set_result(result)
                else:
                    entry.future.set_exception(ValueError(result))
        except (asyncio.IncompleteReadError, ConnectionError):
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
        for job, entry in orphans:
            if entry.future.done():
                continue
            if entry.attempts >= 2 or self._size == 0:
                # Twice in a worker that died: this page is what kills them.
                entry.future.set_exception(ValueError("the parse worker died on this page"))
                continue
            self._submit(await self._least_busy(), job, entry)

    async def close(self) -> None:
        """Stop the workers (their pending pages, if any, fail)."""
        workers, self._workers = self._workers, []
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
