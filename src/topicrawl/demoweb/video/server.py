"""Serves the demo video site over HTTP, switching template version on a schedule.

A :class:`VersionSchedule` is a list of ``(start, version)`` steps on one clock:

- ``clock="requests"``: ``start`` counts the HTML page requests served before (manifests,
  media, images, robots.txt do not count). ``VersionSchedule.after_requests(200, "structural")``
  serves pages 0..199 as ``v1`` and page request 200 onwards as ``structural``.
- ``clock="seconds"``: ``start`` is seconds since :meth:`VideoServer.start`.

The server records every page it served with the version it used (:meth:`VideoServer.served`),
so a benchmark knows exactly which page was the first after the change. ``set_version`` moves
to a version by hand (it replaces the schedule).

With a ``clock`` (days since the site started, e.g. a simulated clock's), the counts served
grow with it (:meth:`VideoSite.truth_at` is what a page said at a day). Pages carry an
``ETag`` of their body and a request with a matching ``If-None-Match`` gets ``304``.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web as aioweb

from topicrawl.core.errors import ConfigError
from topicrawl.demoweb.threaded import ThreadedServer, serve_app
from topicrawl.demoweb.video.site import VideoSite
from topicrawl.demoweb.video.templates import TEMPLATE_VERSIONS

__all__ = ["ServedPage", "VersionSchedule", "VideoServer"]


@dataclass(frozen=True, slots=True)
class VersionSchedule:
    """Which template version is served when (see the module docstring)."""

    steps: tuple[tuple[float, str], ...] = ((0, "v1"),)
    clock: str = "requests"

    def __post_init__(self) -> None:
        if self.clock not in ("requests", "seconds"):
            raise ConfigError(f"clock must be 'requests' or 'seconds', got {self.clock!r}")
        if not self.steps or self.steps[0][0] != 0:
            raise ConfigError("a version schedule starts with a step at 0")
        starts = [start for start, _ in self.steps]
        if any(b <= a for a, b in itertools.pairwise(starts)):
            raise ConfigError(f"schedule steps must start in increasing order, got {starts}")
        for _, version in self.steps:
            if version not in TEMPLATE_VERSIONS:
                raise ConfigError(
                    f"unknown template version {version!r}; known: {TEMPLATE_VERSIONS}"
                )

    @classmethod
    def fixed(cls, version: str) -> VersionSchedule:
        """Always ``version``."""
        return cls(((0, version),))

    @classmethod
    def after_requests(cls, count: int, version: str, *, before: str = "v1") -> VersionSchedule:
        """``before`` for the first ``count`` page requests, then ``version``."""
        return cls(((0, before), (count, version)), "requests")

    @classmethod
    def after_seconds(cls, seconds: float, version: str, *, before: str = "v1") -> VersionSchedule:
        """``before`` until ``seconds`` after start, then ``version``."""
        return cls(((0, before), (seconds, version)), "seconds")

    def version_at(self, value: float) -> str:
        """The version in force at ``value`` on this schedule's clock."""
        current = self.steps[0][1]
        for start, version in self.steps:
            if value >= start:
                current = version
        return current


@dataclass(frozen=True, slots=True)
class ServedPage:
    """One HTML page request: its index among page requests, path, version used, arrival time."""

    index: int
    path: str
    version: str
    at: float


class VideoServer(ThreadedServer):
    """An aiohttp server for a :class:`VideoSite` on one loopback address.

    Args:
        site: what to serve (rebuilt under the bound base URL at :meth:`start`).
        host: loopback address.
        port: 0 for an ephemeral port.
        version_schedule: when each template version is served (default: always ``v1``).
        clock: days since the site started, for the counts served (default: always day 0).
    """

    thread_name = "demo-video"

    def __init__(
        self,
        site: VideoSite,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        version_schedule: VersionSchedule | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if not host.startswith("127."):
            raise ConfigError("the demo video site listens on loopback (127.0.0.0/8) only")
        if not 0 <= port <= 65535:
            raise ConfigError(f"port must be in 0..65535, got {port}")
        self._unbound = site
        self._site: VideoSite | None = None
        self._host = host
        self._port = port
        self._schedule = version_schedule or VersionSchedule()
        self._clock = clock
        self.not_modified = 0
        self._runner: aioweb.AppRunner | None = None
        self._started = 0.0
        self._lock = threading.Lock()
        self._served: list[ServedPage] = []
        self.requests = 0
        self._paths: deque[str] = deque(maxlen=100_000)

    @property
    def site(self) -> VideoSite:
        """The served site, its absolute URLs under :attr:`base_url`.

        Raises:
            RuntimeError: not started.
        """
        if self._site is None:
            raise RuntimeError("the demo video site has not been started")
        return self._site

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT/``."""
        return self.site.base

    @property
    def schedule(self) -> VersionSchedule:
        return self._schedule

    def set_version(self, version: str) -> None:
        """Serve ``version`` from now on (replaces the schedule)."""
        self._schedule = VersionSchedule.fixed(version)

    def version_now(self) -> str:
        """The version the next page request would get."""
        with self._lock:
            return self._version(len(self._served))

    def _version(self, index: int) -> str:
        if self._schedule.clock == "seconds":
            return self._schedule.version_at(time.monotonic() - self._started)
        return self._schedule.version_at(index)

    def requested(self) -> list[str]:
        """The paths of the last 100,000 requests of any kind (pages, manifests, media)."""
        with self._lock:
            return list(self._paths)

    def served(self) -> list[ServedPage]:
        """Every HTML page request so far, in order, with the version it was served in."""
        with self._lock:
            return list(self._served)

    async def start(self) -> str:
        """Listen; returns the base URL.

        Raises:
            RuntimeError: already started.
            OSError: the address or port could not be bound.
        """
        if self._runner is not None:
            raise RuntimeError("the demo video site is already started")
        app = aioweb.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner, port = await serve_app(app, self._host, self._port)
        self._site = self._unbound.at_base(f"http://{self._host}:{port}/")
        self._runner = runner
        with self._lock:
            self._served.clear()
            self._paths.clear()
            self.requests = 0
        self._started = time.monotonic()
        return self._site.base

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def _handle(self, request: aioweb.Request) -> aioweb.Response:
        if request.method not in ("GET", "HEAD"):
            return aioweb.Response(status=405, headers={"Allow": "GET, HEAD"})
        site = self.site
        path = request.path
        version = "v1"
        if site.is_page(path):
            with self._lock:
                index = len(self._served)
                version = self._version(index)
                self._served.append(ServedPage(index, path, version, time.monotonic()))
        with self._lock:
            self.requests += 1
            self._paths.append(path)
        day = self._clock() if self._clock is not None else 0.0
        status, ctype, body = site.render(path, version, day=day)
        if status != 200:
            return aioweb.Response(status=status, body=body, headers={"Content-Type": ctype})
        etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
        if etag in request.headers.get("If-None-Match", ""):
            with self._lock:
                self.not_modified += 1
            return aioweb.Response(status=304, headers={"ETag": etag})
        return aioweb.Response(status=200, body=body, headers={"Content-Type": ctype, "ETag": etag})
