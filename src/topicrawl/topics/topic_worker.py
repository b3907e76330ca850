"""A topic crawler process: fetches the URLs its supervisor sends and sends back what it found.

Run by :class:`topicrawl.topics.supervisor.TopicSupervisor` as
``python -m topicrawl.topics.topic_worker``. Frames on both pipes are a 4-byte big-endian
length and a pickle; the pipes only carry data the supervisor and this worker wrote, so
unpickling is safe (page content only ever travels inside plain strings).

Parent -> worker: a :class:`WorkerConfig` first, then ``(job, url)`` tuples; closing the pipe
means "finish what you have and exit". Worker -> parent: ``("ready", pid)`` once set up, then
``("done", job, PageResult)`` for every job. Each URL is fetched with the engine's
:class:`~topicrawl.fetch.client.HttpFetcher` (robots.txt obeyed when configured, and its
Crawl-delay kept per host within this process) and parsed with
:func:`~topicrawl.parse.html.parse_html`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import struct
import sys
import time
from dataclasses import dataclass, field
from typing import BinaryIO

from topicrawl.core.config import FetchSettings
from topicrawl.core.errors import FetchError
from topicrawl.core.models import ErrorKind, Request
from topicrawl.fetch.client import HttpFetcher
from topicrawl.fetch.robots import RobotsCache
from topicrawl.parse.html import parse_html
from topicrawl.parse.urls import host_of

__all__ = [
    "HEADER",
    "MAX_FRAME",
    "PageResult",
    "WorkerConfig",
    "encode_frame",
    "fetch_page",
    "main",
    "read_frame",
]

log = logging.getLogger(__name__)

HEADER = struct.Struct(">I")
MAX_FRAME = 64 * 1024 * 1024  # a frame claiming more is a broken pipe, not a page


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    """How a topic crawler process fetches; the first frame its supervisor sends.

    Args:
        fetch: the fetch settings (timeouts, caps, User-Agent, retries).
        obey_robots: honour robots.txt (and its Crawl-delay).
        min_host_delay: seconds between two requests to one host from this process.
        max_crawl_delay: cap on a robots.txt Crawl-delay.
        robots_error_ttl: seconds a host stays disallowed after its robots.txt failed.
        excerpt_chars: how much of each page's text is sent back.
        max_links: how many outgoing links of a page are sent back.
    """

    fetch: FetchSettings = field(default_factory=FetchSettings)
    obey_robots: bool = True
    min_host_delay: float = 0.0
    max_crawl_delay: float = 30.0
    robots_error_ttl: float = 600.0
    excerpt_chars: int = 2000
    max_links: int = 500


@dataclass(frozen=True, slots=True)
class PageResult:
    """What fetching one URL gave.

    ``error`` is None for a fetched page (any 2xx), else a message and ``error_kind`` the
    :class:`~topicrawl.core.models.ErrorKind` value. ``excerpt`` is the start of the page's
    main text, ``links`` its followable outgoing links (canonical, first ``max_links``).
    """

    url: str
    final_url: str
    status: int
    title: str = ""
    excerpt: str = ""
    links: tuple[str, ...] = ()
    content_type: str = ""
    error: str | None = None
    error_kind: str | None = None
    elapsed: float = 0.0


def encode_frame(obj: object) -> bytes:
    """One frame: length header and pickle."""
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(payload)) + payload


class _Politeness:
    """Keeps a delay between requests to one host (the larger of ours and Crawl-delay)."""

    def __init__(self, robots: RobotsCache | None, min_delay: float) -> None:
        self._robots = robots
        self._min_delay = min_delay
        self._next: dict[str, float] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def wait(self, url: str) -> None:
        host = host_of(url)
        delay = self._min_delay
        if self._robots is not None:
            delay = max(delay, await self._robots.crawl_delay(url) or 0.0)
        if delay <= 0:
            return
        lock = self._locks.setdefault(host, asyncio.Lock())
        async with lock:
            now = time.monotonic()
            start = max(now, self._next.get(host, 0.0))
            self._next[host] = start + delay
            if start > now:
                await asyncio.sleep(start - now)


async def fetch_page(
    fetcher: HttpFetcher, url: str, config: WorkerConfig, politeness: _Politeness | None = None
) -> PageResult:
    """Fetch and parse one URL; fetch failures come back as a result with ``error`` set."""
    started = time.perf_counter()
    if politeness is not None:
        await politeness.wait(url)
    try:
        response = await fetcher.fetch(Request(url=url))
    except FetchError as exc:
        return PageResult(
            url=url,
            final_url=url,
            status=exc.status or 0,
            error=exc.message[:500],
            error_kind=exc.kind.value,
            elapsed=time.perf_counter() - started,
        )
    title = excerpt = ""
    links: tuple[str, ...] = ()
    html_types = {"text/html", "application/xhtml+xml"}
    if response.text is not None and response.content_type in html_types:
        page = parse_html(response.text, url=response.final_url)
        title = page.title[:500]
        excerpt = page.text[: config.excerpt_chars]
        if not page.nofollow:
            followable = (link.url for link in page.links if not link.nofollow)
            links = tuple(dict.fromkeys(followable))[: config.max_links]
    return PageResult(
        url=url,
        final_url=response.final_url,
        status=response.status,
        title=title,
        excerpt=excerpt,
        links=links,
        content_type=response.content_type,
        elapsed=time.perf_counter() - started,
    )


async def read_frame(reader: asyncio.StreamReader) -> object | None:
    """The next message on a pipe, or None when it ended (mid-frame included).

    Raises:
        ValueError: the frame claims to be larger than :data:`MAX_FRAME`.
        pickle.UnpicklingError: the frame is not a pickle.
    """
    try:
        header = await reader.readexactly(HEADER.size)
        (size,) = HEADER.unpack(header)
        if size > MAX_FRAME:
            raise ValueError(f"a frame of {size} bytes is over the limit")
        payload = await reader.readexactly(size)
    except asyncio.IncompleteReadError:
        return None
    message: object = pickle.loads(payload)  # noqa: S301 - only our own processes write it
    return message


class _Worker:
    def __init__(self, config: WorkerConfig, out: BinaryIO) -> None:
        self._config = config
        self._out = out
        self._fetcher = HttpFetcher(settings=config.fetch)
        self._robots: RobotsCache | None = None
        if config.obey_robots:
            self._robots = RobotsCache(
                session=self._fetcher.session,
                user_agent=config.fetch.user_agent,
                error_ttl=config.robots_error_ttl,
                max_crawl_delay=config.max_crawl_delay,
                timeout=config.fetch.timeout,
            )
            self._fetcher.robots = self._robots
        self._politeness = _Politeness(self._robots, config.min_host_delay)

    def send(self, message: object) -> None:
        self._out.write(encode_frame(message))
        self._out.flush()

    async def job(self, job: int, url: str) -> None:
        try:
            result = await fetch_page(self._fetcher, url, self._config, self._politeness)
        except Exception as exc:  # the boundary: one bad page must not end the process
            log.exception("fetching %s failed unexpectedly", url)
            result = PageResult(
                url=url,
                final_url=url,
                status=0,
                error=f"{type(exc).__name__}: {exc}"[:500],
                error_kind=ErrorKind.OTHER.value,
            )
        self.send(("done", job, result))

    async def close(self) -> None:
        await self._fetcher.close()


async def _serve(reader: asyncio.StreamReader, out: BinaryIO) -> None:
    config = await read_frame(reader)
    if config is None:
        return
    if not isinstance(config, WorkerConfig):
        raise TypeError(f"the first frame must be a WorkerConfig, got {type(config).__name__}")
    worker = _Worker(config, out)
    jobs: set[asyncio.Task[None]] = set()
    try:
        worker.send(("ready", os.getpid()))
        while (frame := await read_frame(reader)) is not None:
            if not (isinstance(frame, tuple) and len(frame) == 2):
                raise TypeError(f"expected a (job, url) frame, got {type(frame).__name__}")
            task = asyncio.create_task(worker.job(int(frame[0]), str(frame[1])))
            jobs.add(task)
            task.add_done_callback(jobs.discard)
        if jobs:
            await asyncio.gather(*jobs)
    finally:
        for task in jobs:
            task.cancel()
        await worker.close()


async def _main_async() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_FRAME)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    await _serve(reader, sys.stdout.buffer)


def main() -> None:
    """Entry point of ``python -m topicrawl.topics.topic_worker``."""
    logging.basicConfig(level=logging.WARNING, format="topic_worker %(levelname)s %(message)s")
    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
        asyncio.run(_main_async())


if __name__ == "__main__":
    # Run the importable module, not this ``__main__`` copy: pickles must name its classes.
    import importlib

    importlib.import_module("topicrawl.topics.topic_worker").main()
