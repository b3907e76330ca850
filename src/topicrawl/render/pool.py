"""A bounded pool of Chromium pages (Playwright, the system browser) that render fetched HTML.

A page's document is not fetched again: the browser is handed the bytes the crawl already
fetched (its navigation request is fulfilled from them, under the page's real URL, so its
relative scripts and same-origin XHR resolve). Every other request the page makes is judged
by :func:`topicrawl.render.resources.resource_action`: images, media, fonts and style sheets
are aborted in the browser; scripts and XHR/fetch (GET only) go through ``fetch`` (the
crawl's own polite fetch: robots.txt, per-host delay and concurrency, user agent) within a
byte cap per request and per page, a time cap per request and a count per page. Navigations
away (``location = ...``) and frames are aborted. A page over its time cap fails.

Containment: each page runs in one browser of the pool's. A renderer that crashes (also
when its JavaScript heap passes ``heap_mb``) or does not load and settle within
``page_timeout`` (a script that never ends, a request that never answers) fails its page and
the browser is replaced (the pages still rendering in the old one finish there first). A
browser that dies, or a page that will not close after its cap (a hung renderer), is
replaced at once; pages that were rendering in it are rendered again once in the new one
(they were not at fault).

Memory: a browser page (tab) is kept for the next renders (a new one costs a renderer
process) and frozen between them, so its timers and polling stop. Its renderer's JavaScript
heap stays small, so V8 seldom runs a full collection and the DOMs of the pages rendered
before would pile up (~2 MB a render): every ``gc_every`` renders the pool asks for one. The
browser is also replaced every ``recycle_after`` renders, or when its processes' PSS passes
``recycle_mb``, so Chromium's caches and leaks over thousands of pages stay bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import psutil

from topicrawl.core.config import BrowserSettings
from topicrawl.core.errors import FetchError, RenderFailed
from topicrawl.core.models import ErrorKind
from topicrawl.render.resources import ResourceAction, resource_action

if TYPE_CHECKING:
    from playwright.async_api import (
        Browser,
        BrowserContext,
        CDPSession,
        Page,
        Playwright,
        Request,
        Route,
    )

__all__ = ["BrowserPool", "Fetched", "Rendered", "SubresourceFetch"]

log = logging.getLogger(__name__)

# Counts the page's unfinished fetch() and XHR calls, from the call (not from when the
# request reaches the route handler); a page cannot reset or hide the count.
_PENDING = """
(() => {
  let pending = 0;
  const done = () => { pending -= 1; };
  const fetch = window.fetch;
  window.fetch = function (...args) {
    pending += 1;
    return fetch.apply(this, args).finally(done);
  };
  const send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (...args) {
    pending += 1;
    this.addEventListener("loadend", done, { once: true });
    return send.apply(this, args);
  };
  Object.defineProperty(window, "__topicrawlPending", { get: () => pending });
})();
"""
_PENDING_COUNT = "() => window.__topicrawlPending || 0"
_LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-dev-shm-usage",
    "--disable-gpu",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--mute-audio",
]
_MEMORY_CHECK_EVERY = 20  # renders of a browser between reads of its PSS (recycle_mb)
_CLOSE_GRACE = 5.0  # seconds a page or browser gets to close before it is killed
_POLL = 0.02


@dataclass(frozen=True, slots=True)
class Fetched:
    """A script or XHR body the crawl fetched for a rendering page."""

    status: int
    content_type: str
    body: bytes


SubresourceFetch = Callable[[str, str, int], Awaitable[Fetched]]
"""Fetches ``url`` for the page ``page_url`` politely, reading at most ``max_bytes``;
raises :class:`~topicrawl.core.errors.FetchError` when it cannot."""


@dataclass(frozen=True, slots=True)
class Rendered:
    """A rendered page: its DOM as HTML, and what rendering it cost."""

    url: str
    html: str
    seconds: float
    loaded: int  # scripts and XHR fetched (or taken from the cache)
    aborted: int  # requests refused (type, method, scheme, caps, fetch errors)
    bytes: int  # bytes of the scripts and XHR


@dataclass(slots=True)
class _Browser:
    browser: Browser
    context: BrowserContext
    pid: int | None
    generation: int
    renders: int = 0
    checked: int = 0  # renders when its memory was last read (recycle_mb)
    active: int = 0
    retired: bool = False  # no new pages; closed when the last one is done
    broken: bool = False  # dead or hung: closed now, its pages rendered again elsewhere
    idle: list[_Tab] = field(default_factory=list)  # pages kept for the next renders


@dataclass(slots=True)
class _Tab:
    """A browser page kept between renders (a new page costs a renderer process), its scripts
    stopped meanwhile; its route handler serves whichever render ``state`` is."""

    page: Page
    cdp: CDPSession
    state: _PageState | None = None
    renders: int = 0
    stopped: bool = False


@dataclass(slots=True)
class _PageState:
    url: str
    html: bytes
    content_type: str
    served: bool = False
    crashed: bool = False
    in_flight: int = 0
    last_change: float = field(default_factory=time.monotonic)
    loaded: int = 0
    aborted: int = 0
    bytes: int = 0
    fetches: set[asyncio.Future[Fetched]] = field(default_factory=set)  # cancelled at the end


class _BrowserGone(Exception):
    """The browser went away under a page that was not at fault."""


class BrowserPool:
    """Renders pages in the system Chromium, at most ``settings.pages`` at once.

    Args:
        settings: the browser settings (caps, pages, recycling).
        fetch: the crawl's polite fetch for scripts and XHR.
        user_agent: the crawler's User-Agent (also what scripts see in ``navigator``).

    Use ``async with`` or :meth:`start` / :meth:`close`; the browser starts on first use.
    """

    def __init__(
        self, *, settings: BrowserSettings, fetch: SubresourceFetch, user_agent: str
    ) -> None:
        self._settings = settings
        self._fetch = fetch
        self._user_agent = user_agent
        self._slots = asyncio.Semaphore(settings.pages)
        self._lock = asyncio.Lock()
        self._playwright: Playwright | None = None
        self._current: _Browser | None = None
        self._old: list[_Browser] = []
        self._generation = 0
        self._cache: OrderedDict[str, Fetched] = OrderedDict()
        self._cache_size = 0
        self._closing: set[asyncio.Task[None]] = set()
        self.counts: Counter[str] = Counter()

    async def __aenter__(self) -> BrowserPool:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def launches(self) -> int:
        """Browsers started so far (1 + restarts + recycles)."""
        return self._generation

    async def start(self) -> None:
        """Start Playwright and the browser.

        Raises:
            RenderFailed: Chromium is missing or does not start.
        """
        await self._browser()

    async def close(self) -> None:
        """Close every browser and Playwright (pages still rendering fail)."""
        async with self._lock:
            browsers = [*self._old, *([self._current] if self._current else [])]
            self._current, self._old = None, []
            for browser in browsers:
                await self._dispose(browser)
            for task in list(self._closing):
                with contextlib.suppress(Exception):
                    await task
            if self._playwright is not None:
                playwright, self._playwright = self._playwright, None
                with contextlib.suppress(Exception):
                    await playwright.stop()

    def rss(self) -> int:
        """Resident memory of the pool's browser processes (bytes, with their children;
        pages shared between processes counted in each)."""
        browsers = [*self._old, *([self._current] if self._current else [])]
        return sum(_tree_memory(browser.pid, pss=False) for browser in browsers)

    def browser_pid(self) -> int | None:
        """The current browser's process id (None before the first render)."""
        return self._current.pid if self._current is not None else None

    async def render(self, url: str, html: bytes, *, content_type: str = "text/html") -> Rendered:
        """Render ``html`` (fetched from ``url``) and return its DOM.

        Raises:
            RenderFailed: the page crashed its renderer (kind ``render``), did not load and
                settle within ``page_timeout`` (kind ``timeout``), or the browser failed.
        """
        async with self._slots:
            for attempt in range(2):
                browser = await self._browser()
                browser.active += 1
                browser.renders += 1
                try:
                    return await self._render_in(browser, url, html, content_type)
                except _BrowserGone as exc:
                    self.counts["renders/browser_gone"] += 1
                    if attempt:
                        raise RenderFailed(url, f"the browser failed twice: {exc}") from exc
                finally:
                    browser.active -= 1
                    if browser.retired and not browser.active:
                        self._close_later(browser)
        raise AssertionError("unreachable")  # pragma: no cover

    # -- browsers ---------------------------------------------------------------------------

    async def _browser(self) -> _Browser:
        """The browser new pages go to, replaced first when broken or due for recycling."""
        async with self._lock:
            current = self._current
            if current is not None:
                if current.broken or not current.browser.is_connected():
                    self.counts["browser/restarts"] += 1
                    current.broken = True
                    await self._retire(current)
                elif current.renders >= self._settings.recycle_after:
                    self.counts["browser/recycled"] += 1
                    await self._retire(current)
                elif await self._over_memory(current):
                    self.counts["browser/recycled_memory"] += 1
                    await self._retire(current)
            if self._current is None:
                self._current = await self._launch()
            return self._current

    async def _over_memory(self, browser: _Browser) -> bool:
        """Whether the browser's processes are over ``recycle_mb`` (read every
        :data:`_MEMORY_CHECK_EVERY` renders: reading PSS costs a few ms a process)."""
        cap = self._settings.recycle_mb
        if not cap or browser.renders < browser.checked + _MEMORY_CHECK_EVERY:
            return False
        browser.checked = browser.renders
        return await asyncio.to_thread(_tree_memory, browser.pid, pss=True) > cap * 1_000_000

    async def _retire(self, browser: _Browser) -> None:
        self._current = None
        browser.retired = True
        if browser.broken or not browser.active:
            await self._dispose(browser)
        else:
            self._old.append(browser)

    def _close_later(self, browser: _Browser) -> None:
        task = asyncio.get_running_loop().create_task(self._dispose(browser))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _launch(self) -> _Browser:
        from playwright.async_api import Error, async_playwright  # noqa: PLC0415 - optional

        settings = self._settings
        if not await asyncio.to_thread(os.path.isfile, settings.executable):
            raise RenderFailed(
                "",
                f"no Chromium at {settings.executable} (install it, e.g. apt-get install"
                " chromium; never `playwright install`)",
                kind=ErrorKind.RENDER,
            )
        try:
            if self._playwright is None:
                self._playwright = await async_playwright().start()
            before = _browser_pids()
            browser = await self._playwright.chromium.launch(
                executable_path=settings.executable,
                args=[*_LAUNCH_ARGS, f"--js-flags=--max-old-space-size={settings.heap_mb}"],
                headless=True,
                handle_sigint=False,
                handle_sigterm=False,
                handle_sighup=False,
                timeout=30_000,
            )
            context = await browser.new_context(
                user_agent=self._user_agent,
                service_workers="block",
                accept_downloads=False,
                viewport={"width": 1280, "height": 900},
            )
            await context.add_init_script(_PENDING)
        except Error as exc:
            raise RenderFailed("", f"Chromium did not start: {exc.message}") from exc
        new = sorted(_browser_pids() - before)
        self._generation += 1
        launched = _Browser(browser, context, new[0] if len(new) == 1 else None, self._generation)
        browser.on("disconnected", lambda _: setattr(launched, "broken", True))
        log.debug("browser %d started (pid %s)", launched.generation, launched.pid)
        return launched

    async def _dispose(self, browser: _Browser) -> None:
        """Close a browser; kill its processes if it does not close in time."""
        if browser in self._old:
            self._old.remove(browser)
        try:
            async with asyncio.timeout(_CLOSE_GRACE):
                await browser.browser.close()
        except Exception as exc:  # any failure to close has one remedy: kill it
            log.info("browser %d did not close (%r); killing it", browser.generation, exc)
            self.counts["browser/killed"] += 1
        await asyncio.to_thread(_kill_tree, browser.pid)  # waits for them to exit

    # -- one page ---------------------------------------------------------------------------

    async def _render_in(
        self, browser: _Browser, url: str, html: bytes, content_type: str
    ) -> Rendered:
        from playwright.async_api import Error  # noqa: PLC0415 - optional dependency

        settings = self._settings
        state = _PageState(url=url, html=html, content_type=content_type)
        started = time.perf_counter()
        tab: _Tab | None = None
        keep = False
        try:
            async with asyncio.timeout(settings.page_timeout):
                tab = browser.idle.pop() if browser.idle else await self._open_tab(browser)
                if tab.stopped:
                    # Between this and the navigation the previous page may run a timer; what
                    # it asks for meets this render's caps, and a navigation of its own would
                    # take this document (or be refused), so goto fails: the render fails,
                    # it never returns another page's DOM.
                    await tab.cdp.send("Emulation.setScriptExecutionDisabled", {"value": False})
                tab.state = state
                await tab.page.goto(url, wait_until="load", timeout=0)
                await self._settle(state, tab.page)
                dom = await tab.page.content()
                # Stop the page's scripts (timers, polling) while it waits for the next render.
                # A navigation to about:blank did the same for ~20 % more CPU a render (the
                # browser tree's, benchmarks/render).
                await tab.cdp.send("Emulation.setScriptExecutionDisabled", {"value": True})
                tab.stopped = True
                tab.renders += 1
                if settings.gc_every and tab.renders % settings.gc_every == 0:
                    # A renderer's JavaScript heap stays small, so V8 seldom runs a full
                    # collection, and the DOMs of the pages it rendered before stay in memory.
                    await tab.cdp.send("HeapProfiler.collectGarbage")
                keep = True
        except TimeoutError as exc:
            self.counts["renders/timeout"] += 1
            # Its renderer may be stuck in a script, and Chromium may give that renderer to
            # the next page of the same site: new pages go to a new browser.
            await self._replace_after(browser)
            raise RenderFailed(
                url,
                f"the page did not load and settle within {settings.page_timeout:g} s",
                kind=ErrorKind.TIMEOUT,
            ) from exc
        except Error as exc:
            if state.crashed:
                self.counts["renders/crashed"] += 1
                await self._replace_after(browser)
                raise RenderFailed(url, "the page crashed its renderer") from exc
            if browser.broken or not browser.browser.is_connected():
                raise _BrowserGone(exc.message) from exc
            self.counts["renders/failed"] += 1
            raise RenderFailed(url, f"rendering failed: {exc.message[:300]}") from exc
        finally:
            for fetching in list(state.fetches):
                fetching.cancel()
            if tab is not None:
                tab.state = None
                if keep and not browser.retired:
                    browser.idle.append(tab)
                else:
                    await self._close_page(browser, tab.page)
        self.counts["renders/ok"] += 1
        return Rendered(
            url=url,
            html=dom,
            seconds=time.perf_counter() - started,
            loaded=state.loaded,
            aborted=state.aborted,
            bytes=state.bytes,
        )

    async def _open_tab(self, browser: _Browser) -> _Tab:
        page = await browser.context.new_page()
        tab = _Tab(page, await browser.context.new_cdp_session(page))

        def crashed(_: object) -> None:
            if tab.state is not None:
                tab.state.crashed = True

        async def route(route: Route) -> None:
            state = tab.state
            if state is None:  # a page between renders asks for something: nobody wants it
                self.counts["requests/between_renders"] += 1
                await _abort(route)
                return
            await self._route(route, state)

        page.on("crash", crashed)
        page.on("dialog", _dismiss)
        await page.route("**/*", route)
        return tab

    async def _replace_after(self, browser: _Browser) -> None:
        """Retire a browser one of whose renderers crashed or hung (see the module doc)."""
        async with self._lock:
            if self._current is browser:
                await self._retire(browser)
            browser.retired = True

    async def _close_page(self, browser: _Browser, page: Page) -> None:
        try:
            async with asyncio.timeout(_CLOSE_GRACE):
                await page.close(run_before_unload=False)
        except Exception:  # a page that will not close means a hung browser
            if not browser.broken and browser.browser.is_connected():
                log.warning("a page did not close; replacing browser %d", browser.generation)
                self.counts["browser/hung"] += 1
            browser.broken = True

    async def _settle(self, state: _PageState, page: Page) -> None:
        """Wait until no script or XHR has been in flight for ``settle`` seconds, here and in
        the page: a request the page has made may not have reached the route handler yet
        (it travels browser -> driver -> here, slowly on a loaded machine), so the page's own
        count of unfinished fetch and XHR calls (:data:`_PENDING`) must be 0 too."""
        quiet = self._settings.settle
        while True:
            if state.crashed:
                raise _crash_error()
            if not state.in_flight and time.monotonic() - state.last_change >= quiet:
                if not await page.evaluate(_PENDING_COUNT):
                    return
                state.last_change = time.monotonic()
            await asyncio.sleep(_POLL)

    async def _route(self, route: Route, state: _PageState) -> None:
        from playwright.async_api import Error  # noqa: PLC0415 - optional dependency

        request = route.request
        try:
            if request.is_navigation_request():
                await self._navigate(route, request, state)
                return
            action = resource_action(request.resource_type, request.method, request.url)
            if action is not ResourceAction.LOAD:
                self.counts[f"requests/{action.value}"] += 1
                state.aborted += 1
                await route.abort("blockedbyclient")
                return
            await self._load(route, request.url, state)
        except Error as exc:  # the page closed under the request: nothing left to answer
            log.debug("request of a closed page %s: %s", request.url[:200], exc.message)

    async def _navigate(self, route: Route, request: Request, state: _PageState) -> None:
        if not state.served and request.frame.parent_frame is None:
            state.served = True
            await route.fulfill(status=200, content_type=state.content_type, body=state.html)
            return
        self.counts["requests/blocked_navigation"] += 1  # frames, redirects by script
        state.aborted += 1
        await route.abort("blockedbyclient")

    async def _load(self, route: Route, url: str, state: _PageState) -> None:
        settings = self._settings
        room = min(settings.resource_bytes, settings.page_bytes - state.bytes)
        if state.loaded >= settings.max_requests or room <= 0:
            self.counts["requests/over_cap"] += 1
            state.aborted += 1
            await route.abort("blockedbyclient")
            return
        cached = self._cache.get(url)
        state.in_flight += 1
        try:
            if cached is not None and len(cached.body) <= room:
                self._cache.move_to_end(url)
                fetched = cached
                self.counts["requests/cached"] += 1
            else:
                fetching = asyncio.ensure_future(self._fetch(url, state.url, room))
                state.fetches.add(fetching)
                try:
                    async with asyncio.timeout(settings.resource_timeout):
                        fetched = await fetching
                finally:
                    state.fetches.discard(fetching)
                self.counts["requests/fetched"] += 1
                if route.request.resource_type == "script":
                    self._remember(url, fetched)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            # The render ended (cap, crash) and cancelled its fetches: nobody wants this.
            self.counts["requests/abandoned"] += 1
            return
        except (FetchError, TimeoutError) as exc:
            self.counts["requests/failed"] += 1
            state.aborted += 1
            log.debug("script or XHR %s not loaded: %r", url[:200], exc)
            await route.abort("failed")
            return
        except Exception:  # the fetch's own bug: reported, the request fails, the page goes on
            log.exception("fetching %s for %s failed", url[:200], state.url[:200])
            self.counts["requests/failed"] += 1
            state.aborted += 1
            await route.abort("failed")
            return
        finally:
            state.in_flight -= 1
            state.last_change = time.monotonic()
        state.loaded += 1
        state.bytes += len(fetched.body)
        await route.fulfill(
            status=fetched.status, content_type=fetched.content_type, body=fetched.body
        )

    def _remember(self, url: str, fetched: Fetched) -> None:
        cap = self._settings.cache_bytes
        if fetched.status != 200 or len(fetched.body) > cap // 4:
            return
        old = self._cache.pop(url, None)
        if old is not None:
            self._cache_size -= len(old.body)
        self._cache[url] = fetched
        self._cache_size += len(fetched.body)
        while self._cache_size > cap:
            _, dropped = self._cache.popitem(last=False)
            self._cache_size -= len(dropped.body)


async def _abort(route: Route) -> None:
    from playwright.async_api import Error  # noqa: PLC0415 - optional dependency

    with contextlib.suppress(Error):
        await route.abort("blockedbyclient")


def _dismiss(dialog: Any) -> None:
    """alert(), confirm() and prompt() of a rendering page are dismissed at once."""
    task = asyncio.ensure_future(dialog.dismiss())
    task.add_done_callback(lambda done: done.cancelled() or done.exception())


def _crash_error() -> Exception:
    from playwright.async_api import Error  # noqa: PLC0415 - optional dependency

    return Error("the page crashed")


def _browser_pids() -> set[int]:
    """Chromium browser processes (not its renderers) among this process's descendants."""
    found = set()
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                cmdline = child.cmdline()
                if (
                    cmdline
                    and "chrom" in os.path.basename(cmdline[0]).lower()
                    and not any(arg.startswith("--type=") for arg in cmdline)
                ):
                    found.add(child.pid)
    return found


def _tree_memory(pid: int | None, *, pss: bool) -> int:
    """RSS or PSS of a process and its descendants (bytes; 0 when it is gone)."""
    total = 0
    if pid is None:
        return total
    with contextlib.suppress(psutil.Error):
        process = psutil.Process(pid)
        for member in [process, *process.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                total += member.memory_full_info().pss if pss else member.memory_info().rss
    return total


def _kill_tree(pid: int | None) -> None:
    """Kill a browser process and its children (renderers, GPU and utility processes)."""
    if pid is None:
        return
    with contextlib.suppress(psutil.Error):
        process = psutil.Process(pid)
        members = [*process.children(recursive=True), process]
        for member in members:
            with contextlib.suppress(psutil.Error, ProcessLookupError):
                member.send_signal(signal.SIGKILL)
        psutil.wait_procs(members, timeout=2.0)
