"""robots.txt per host, fetched once and cached, read with protego under Google's rules."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urljoin

import aiohttp
from protego import Protego
from yarl import URL

from topicrawl.core.errors import FetchError
from topicrawl.fetch.proxies import ProxyPool
from topicrawl.parse.urls import InvalidUrl, canonicalize, host_of

__all__ = ["RobotsCache", "RobotsDecision", "RobotsFetch", "RobotsFile", "robots_agent"]

logger = logging.getLogger(__name__)

MAX_ROBOTS_BYTES = 500 * 1024
"""robots.txt is read up to this size; the rest is ignored (Google's limit)."""

MAX_ROBOTS_REDIRECTS = 5
"""Redirect hops followed for robots.txt; beyond them it counts as missing (allow all)."""

ROBOTS_IN_FLIGHT = 32
"""robots.txt requests in flight at once (session mode), whatever the number of new hosts."""

FIRST_RETRY = 15.0
"""Seconds a host waits after its robots.txt first timed out; doubled at each timeout."""

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_PRODUCT = re.compile(r"([A-Za-z0-9_\-]+)/")


@dataclass(frozen=True, slots=True)
class RobotsFile:
    """A robots.txt answer: the final HTTP status and the (truncated, decoded) text."""

    status: int
    text: str


RobotsFetch = Callable[[str], Awaitable[RobotsFile]]
"""Fetches a robots.txt URL, following redirects; raises OSError, TimeoutError,
aiohttp.ClientError or FetchError when the host cannot be reached."""


@dataclass(frozen=True, slots=True)
class RobotsDecision:
    """Whether a URL may be fetched. ``retry_after`` is set when the answer is "not now"
    because the host's robots.txt could not be read (5xx, timeout): ask again after it."""

    allowed: bool
    retry_after: float | None = None


_ALLOW = RobotsDecision(allowed=True)
_DISALLOW = RobotsDecision(allowed=False)


@dataclass(frozen=True, slots=True)
class _HostRules:
    parser: Protego | None  # None: no usable robots.txt, so everything is allowed
    unreachable: bool  # robots.txt gave 5xx or no answer: everything is disallowed for now
    expires_at: float
    problem: str = ""  # why it is unreachable, in words
    silent: int = 0  # fetches in a row that timed out


def robots_agent(user_agent: str) -> str:
    """The product token robots.txt groups are matched against, from a User-Agent string.

    ``"topicrawl/0.1 (+https://x.org)"`` gives ``"topicrawl"``; a browser-style
    ``"Mozilla/5.0 (compatible; Foobot/1.0)"`` gives ``"Foobot"``.
    """
    tokens: list[str] = [t for t in _PRODUCT.findall(user_agent) if t.lower() != "mozilla"]
    if tokens:
        return tokens[0]
    words = user_agent.split()
    return words[0] if words else "*"


class RobotsCache:
    """robots.txt rules per host: fetched on first need, shared by concurrent callers, cached.

    Status handling follows Google: 2xx is parsed; 4xx (404 included) means no rules, so all
    is allowed; 429, 5xx or a network error (refused, reset, no such host: a definite answer)
    disallows the whole host for ``error_ttl`` seconds, after which robots.txt is fetched
    again. A timeout disallows it for ``first_retry`` seconds, doubled at each timeout in a
    row up to ``error_ttl``: when a crawl starts on a thousand hosts at once, a timeout says
    more about our own load than about the host, which gets a fair chance again soon; a host
    that never answers ends up asked every ``error_ttl``. Redirects are followed up to 5 hops
    (more counts as 404); the file is read up to 500 KiB and the rest ignored. Good answers
    are kept for ``ttl`` seconds. At most ``max_hosts`` hosts are cached (least recently used
    go first).

    At most ``max_in_flight`` robots.txt requests run at once; a request's timeout counts
    from when it starts, not while it waits for its turn.

    The cache is keyed by host (with port): the scheme of the first URL asked about a host is
    the one its robots.txt is fetched over (a bare host means ``http``).

    Args:
        session: an aiohttp session to fetch robots.txt with (usually the fetcher's own).
        fetch_text: instead of a session, a function that fetches a robots.txt URL.
        user_agent: the crawler's User-Agent; its product token selects the robots group.
        error_ttl: seconds a host stays disallowed after its robots.txt failed (429, 5xx),
            or a network error, and the longest wait after robots.txt timeouts.
        max_crawl_delay: cap on the Crawl-delay a site may ask for.
        clock: monotonic seconds, injectable for tests.
        ttl: seconds a fetched robots.txt stays valid.
        max_hosts: how many hosts' rules are kept.
        timeout: seconds for one robots.txt fetch (session mode).
        proxies: proxies to fetch robots.txt through (session mode), if the crawl uses them.
        max_in_flight: robots.txt fetches running at once (further hosts wait their turn).
        first_retry: seconds before a robots.txt that timed out is asked again.

    Raises:
        ValueError: neither or both of ``session`` and ``fetch_text`` were given.
    """

    def __init__(
        self,
        *,
        session: aiohttp.ClientSession | None = None,
        fetch_text: RobotsFetch | None = None,
        user_agent: str,
        error_ttl: float,
        max_crawl_delay: float,
        clock: Callable[[], float] = time.monotonic,
        ttl: float = 86_400.0,
        max_hosts: int = 10_000,
        timeout: float = 10.0,
        proxies: ProxyPool | None = None,
        max_in_flight: int = ROBOTS_IN_FLIGHT,
        first_retry: float = FIRST_RETRY,
    ) -> None:
        if (session is None) == (fetch_text is None):
            raise ValueError("RobotsCache needs exactly one of session= or fetch_text=")
        self._session = session
        self._fetch_text = fetch_text
        self._agent = robots_agent(user_agent)
        self._headers = {"User-Agent": user_agent, "Accept": "text/plain,*/*;q=0.5"}
        self._error_ttl = error_ttl
        self._max_crawl_delay = max_crawl_delay
        self._clock = clock
        self._ttl = ttl
        self._max_hosts = max_hosts
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._watchdog = timeout + 2.0
        self._slots = asyncio.Semaphore(max_in_flight)
        self._first_retry = min(first_retry, error_ttl)
        self._proxies = proxies
        self._rules: OrderedDict[str, _HostRules] = OrderedDict()
        self._loading: dict[str, asyncio.Task[_HostRules]] = {}
        self.before_request: Callable[[str], Awaitable[None]] | None = None
        """Awaited with the URL before each robots.txt request (each redirect hop too), e.g.
        the crawl's per-host request spacing (session mode)."""

    @property
    def agent(self) -> str:
        """The product token matched against robots.txt ``User-agent`` lines."""
        return self._agent

    async def allowed(self, url: str) -> bool:
        """Whether robots.txt lets us fetch this canonical URL (False while it is unreachable)."""
        return (await self.decide(url)).allowed

    async def decide(self, url: str) -> RobotsDecision:
        """Whether the URL may be fetched, and if not because robots.txt is unreachable, when
        to ask again."""
        host = host_of(url)
        rules = await self._rules_for(host, url)
        if rules.unreachable:
            return RobotsDecision(
                allowed=False, retry_after=max(0.0, rules.expires_at - self._clock())
            )
        if rules.parser is None or rules.parser.can_fetch(url, self._agent):
            return _ALLOW
        return _DISALLOW

    def problem(self, host: str) -> str | None:
        """Why the host's robots.txt could not be read (e.g. "robots.txt answered 500"), while
        that holds the host; ``None`` when it was read or not asked for yet.

        Args:
            host: a host as :func:`~topicrawl.parse.urls.host_of` gives it, or a URL of it.
        """
        rules = self._rules.get(self._host_and_url(host)[0])
        if rules is None or not rules.unreachable or rules.expires_at <= self._clock():
            return None
        return rules.problem

    async def crawl_delay(self, host: str) -> float | None:
        """The delay in seconds the host asks for (Crawl-delay or Request-rate), capped.

        Args:
            host: a host as :func:`~topicrawl.parse.urls.host_of` gives it, or a URL of it
                (a URL tells which scheme to fetch robots.txt over).
        """
        rules = await self._rules_for(*self._host_and_url(host))
        if rules.parser is None:
            return None
        delays = []
        delay = rules.parser.crawl_delay(self._agent)
        if delay is not None:
            delays.append(float(delay))
        rate = rules.parser.request_rate(self._agent)
        if rate is not None and rate.requests > 0:
            delays.append(rate.seconds / rate.requests)
        if not delays:
            return None
        return max(0.0, min(max(delays), self._max_crawl_delay))

    async def sitemaps(self, host: str) -> list[str]:
        """The sitemap URLs the host's robots.txt lists (``host`` as for :meth:`crawl_delay`)."""
        rules = await self._rules_for(*self._host_and_url(host))
        return list(rules.parser.sitemaps) if rules.parser is not None else []

    def _host_and_url(self, host_or_url: str) -> tuple[str, str]:
        if "://" in host_or_url:
            return host_of(host_or_url), host_or_url
        return host_or_url, f"http://{host_or_url}/"

    async def _rules_for(self, host: str, url: str) -> _HostRules:
        rules = self._rules.get(host)
        if rules is not None and rules.expires_at > self._clock():
            self._rules.move_to_end(host)
            return rules
        task = self._loading.get(host)
        if task is None:
            task = asyncio.create_task(self._load(host, url))
            self._loading[host] = task
            task.add_done_callback(lambda done: self._loaded(host, done))
        # Shielded: a caller that is cancelled must not cancel the fetch the others wait on.
        return await asyncio.shield(task)

    def _loaded(self, host: str, task: asyncio.Task[_HostRules]) -> None:
        if self._loading.get(host) is task:
            del self._loading[host]
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            logger.error("robots.txt lookup for %s failed unexpectedly", host, exc_info=error)
            return
        self._rules[host] = task.result()
        self._rules.move_to_end(host)
        while len(self._rules) > self._max_hosts:
            self._rules.popitem(last=False)

    async def _load(self, host: str, url: str) -> _HostRules:
        scheme = "https" if url.startswith("https://") else "http"
        robots_url = f"{scheme}://{host}/robots.txt"
        try:
            answer = await self._fetch(robots_url)
        except (TimeoutError, OSError, aiohttp.ClientError, FetchError) as exc:
            problem = f"robots.txt could not be fetched: {_error_words(exc)}"
            silent, wait = 0, self._error_ttl
            if isinstance(exc, TimeoutError):  # aiohttp's timeouts are TimeoutErrors too
                before = self._rules.get(host)
                silent = (before.silent if before is not None else 0) + 1
                wait = min(self._error_ttl, self._first_retry * 2.0 ** (silent - 1))
            logger.info("%s: %s; host disallowed for %.0fs", host, problem, wait)
            return _HostRules(
                None,
                unreachable=True,
                expires_at=self._clock() + wait,
                problem=problem,
                silent=silent,
            )
        now = self._clock()
        if answer.status == 429 or answer.status >= 500:
            logger.info(
                "robots.txt of %s answered %d; host disallowed for %.0fs",
                host,
                answer.status,
                self._error_ttl,
            )
            return _HostRules(
                None,
                unreachable=True,
                expires_at=now + self._error_ttl,
                problem=f"robots.txt answered {answer.status}",
            )
        if 200 <= answer.status < 300:
            return _HostRules(
                Protego.parse(answer.text), unreachable=False, expires_at=now + self._ttl
            )
        logger.debug("robots.txt of %s answered %d; all allowed", host, answer.status)
        return _HostRules(None, unreachable=False, expires_at=now + self._ttl)

    async def _fetch(self, robots_url: str) -> RobotsFile:
        if self._fetch_text is not None:
            async with self._slots:
                answer = await self._fetch_text(robots_url)
            return RobotsFile(answer.status, _truncate(answer.text))
        assert self._session is not None  # one of the two is set, checked in __init__
        return await self._fetch_with_session(self._session, robots_url)

    async def _fetch_with_session(self, session: aiohttp.ClientSession, url: str) -> RobotsFile:
        current = url
        for _ in range(MAX_ROBOTS_REDIRECTS + 1):
            if self.before_request is not None:
                await self.before_request(current)
            # Our own bound over each hop, whatever aiohttp's timeouts do (every URL of the
            # host waits on this fetch), counted once the request has its slot.
            async with self._slots, asyncio.timeout(self._watchdog):
                answer = await self._hop(session, current)
            if isinstance(answer, RobotsFile):
                return answer
            try:
                current = canonicalize(urljoin(current, answer))
            except InvalidUrl:
                logger.debug("robots.txt at %s redirects to %r: ignored", url, answer)
                return RobotsFile(404, "")
        logger.debug("robots.txt at %s: more than %d redirects", url, MAX_ROBOTS_REDIRECTS)
        return RobotsFile(404, "")

    async def _hop(self, session: aiohttp.ClientSession, url: str) -> RobotsFile | str:
        """One request: the answer, or where it redirects to."""
        proxy = self._proxies.choose() if self._proxies is not None else None
        async with session.get(
            URL(url),
            headers=self._headers,
            allow_redirects=False,
            timeout=self._timeout,
            proxy=proxy,
        ) as response:
            location = response.headers.get("Location")
            if response.status in _REDIRECTS and location:
                return location
            if not 200 <= response.status < 300:
                return RobotsFile(response.status, "")
            body = bytearray()
            while len(body) < MAX_ROBOTS_BYTES:
                chunk = await response.content.read(MAX_ROBOTS_BYTES - len(body))
                if not chunk:
                    break
                body += chunk
            if len(body) >= MAX_ROBOTS_BYTES:
                response.close()  # the rest is ignored: do not download it
                newline = body.rfind(b"\n")
                if newline >= 0:
                    del body[newline + 1 :]  # the last line was cut short
            text = body.decode("utf-8", errors="replace")
            return RobotsFile(response.status, _truncate(text))


def _error_words(exc: BaseException) -> str:
    """A network error in a few words: its class, and its message when it has one."""
    text = str(exc).strip()
    name = type(exc).__name__
    return f"{name}: {text[:200]}" if text else name


def _truncate(text: str) -> str:
    """Drop a leading BOM, cut at the size cap, and drop a line the cut left half-read."""
    text = text.removeprefix("\ufeff")
    if len(text) <= MAX_ROBOTS_BYTES // 4:
        return text  # fast path: cannot be over the cap even at 4 bytes a character
    raw = text.encode("utf-8")
    if len(raw) <= MAX_ROBOTS_BYTES:
        return text
    cut = raw[:MAX_ROBOTS_BYTES].decode("utf-8", errors="ignore")
    newline = cut.rfind("\n")
    return cut[: newline + 1] if newline >= 0 else cut
