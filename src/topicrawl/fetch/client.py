"""The HTTP fetcher: one pooled aiohttp session, manual redirects, retries, caps and decoding."""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import socket
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC
from urllib.parse import urljoin

import aiohttp
from aiohttp.compression_utils import HAS_BROTLI
from yarl import URL

from topicrawl.core.config import FetchSettings
from topicrawl.core.errors import (
    BlockedError,
    BodyTooLarge,
    ContentTypeRejected,
    FetchError,
    OutOfScope,
    PermanentFetchError,
    RedirectLoop,
    RetryableFetchError,
    RobotsDisallowed,
    TooManyRedirects,
    UrlTooLong,
)
from topicrawl.core.models import ErrorKind, Request, Response
from topicrawl.fetch.connection import GuardedConnector
from topicrawl.fetch.proxies import ProxyPool
from topicrawl.fetch.robots import RobotsCache
from topicrawl.parse.charset import decode_body
from topicrawl.parse.urls import InvalidUrl, Scope, canonicalize

__all__ = ["HttpFetcher", "create_session", "parse_retry_after"]

logger = logging.getLogger(__name__)

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
# A failing proxy is swapped for another at once, without using up a retry, this many times.
_PROXY_SWITCHES = 3
# getaddrinfo answers that mean the name does not exist (as opposed to a resolver hiccup).
_NO_SUCH_NAME = frozenset(
    code
    for code in (getattr(socket, "EAI_NONAME", None), getattr(socket, "EAI_NODATA", None))
    if code is not None
)
# Media types decoded to text when the crawl accepts them; others keep only the bytes.
_TEXT_TYPES = frozenset({"application/xhtml+xml", "application/xml", "application/json"})
# Unwanted bodies (redirects, errors) up to this size are read to keep the connection.
_DRAIN_BYTES = 64 * 1024
# Our own bound on one attempt fires this long after aiohttp's total timeout should have.
_WATCHDOG_GRACE = 2.0
_HTML_MARKERS = (b"<!doctype html", b"<html", b"<head", b"<body", b"<title", b"<meta")


def _accept_encoding() -> str:
    return "gzip, deflate, br" if HAS_BROTLI else "gzip, deflate"


def _default_headers(settings: FetchSettings) -> dict[str, str]:
    accept = ",".join(settings.content_types) + ";q=0.9,*/*;q=0.1"
    return {
        "User-Agent": settings.user_agent,
        "Accept": accept,
        "Accept-Encoding": _accept_encoding(),
    }


def _timeout(settings: FetchSettings) -> aiohttp.ClientTimeout:
    # sock_connect, not connect: waiting for a free pooled connection is not a slow server.
    return aiohttp.ClientTimeout(total=settings.timeout, sock_connect=settings.connect_timeout)


def create_session(settings: FetchSettings) -> aiohttp.ClientSession:
    """A session tuned for crawling: a pooled keep-alive connector with a DNS cache, the
    crawler's headers, the fetch timeouts, and no cookies (each fetch stands alone). Its
    connections close when a server sends bytes no request asked for (see
    :mod:`topicrawl.fetch.connection`), so a response is only ever read by its own request.

    Must be called with an event loop running.
    """
    connector = GuardedConnector(
        limit=settings.connections,
        limit_per_host=0,  # per-host politeness is the frontier's job
        ttl_dns_cache=300,
        keepalive_timeout=30.0,
    )
    return aiohttp.ClientSession(
        connector=connector,
        headers=_default_headers(settings),
        timeout=_timeout(settings),
        cookie_jar=aiohttp.DummyCookieJar(),
        max_line_size=16_384,
        max_field_size=16_384,
    )


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP date), or ``None``.

    Args:
        value: the header value.
        now: wall-clock seconds since the epoch to measure an HTTP date from.
    """
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


@dataclass(frozen=True, slots=True)
class _Redirect:
    location: str


@dataclass(frozen=True, slots=True)
class _Answer:
    status: int
    headers: Mapping[str, str]
    body: bytes
    content_type: str
    charset: str | None


class HttpFetcher:
    """Fetches requests over one pooled aiohttp session; implements ``core.protocols.Fetcher``.

    Each fetch: checks the URL's length, scope and robots.txt; follows redirects itself
    (every hop canonicalised and checked the same way, loops and over-long chains refused);
    retries timeouts, connection errors, 5xx and 429 with full-jitter exponential backoff,
    honouring Retry-After (a wait longer than ``backoff_max`` is handed back at once as
    :class:`BlockedError`); refuses unwanted content types from the headers, before any body
    is read; streams the body and stops at ``max_body_bytes`` after decompression; decodes
    text with a checked charset (or, with ``decode=False``, leaves that to the consumer:
    the response then carries the declared ``charset`` and ``text`` is None). Requests go
    through ``proxies`` when a pool is given.

    Args:
        settings: the fetch settings.
        robots: robots.txt rules to obey, or None to ignore robots.txt. Settable later
            (``fetcher.robots = ...``), so a cache can share :attr:`session`.
        scope: scope rules every redirect target must meet, or None for any URL.
        proxies: the proxy pool, or None to connect directly.
        session: an aiohttp session to use (the caller closes it); by default the fetcher
            creates one with :func:`create_session` on first use and closes it itself.
        sleep: how to wait between retries (injectable for tests).
        rng: the random source for backoff jitter (injectable for tests).
        decode: decode text bodies here; the engine passes False when parse workers decode
            them (the event loop then never holds a decoded copy of a big page).
    """

    def __init__(
        self,
        *,
        settings: FetchSettings,
        robots: RobotsCache | None = None,
        scope: Scope | None = None,
        proxies: ProxyPool | None = None,
        session: aiohttp.ClientSession | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
        decode: bool = True,
    ) -> None:
        self.robots = robots
        self.before_request: Callable[[str], Awaitable[None]] | None = None
        """Awaited with the URL before each HTTP request: the first, each redirect hop and
        each retry (e.g. the crawl's per-host request spacing); None: none."""
        self._decode = decode
        self._settings = settings
        self._scope = scope
        self._proxies = proxies if proxies is not None and len(proxies) > 0 else None
        self._session = session
        self._owns_session = session is None
        # An injected session may lack our defaults, so they go with each request then.
        self._headers = None if session is None else _default_headers(settings)
        self._timeout = _timeout(settings)
        self._watchdog = settings.timeout + _WATCHDOG_GRACE
        self._sleep = sleep
        self._rng = rng if rng is not None else random.Random()
        self._max_body = settings.max_body_bytes
        self._max_url = settings.max_url_length
        exact = {t.lower() for t in settings.content_types if not t.endswith("/*")}
        self._accept_exact = frozenset(exact)
        self._accept_prefixes = tuple(
            t.lower()[:-1] for t in settings.content_types if t.endswith("/*")
        )

    @property
    def session(self) -> aiohttp.ClientSession:
        """The aiohttp session requests go through (created on first use)."""
        if self._session is None:
            self._session = create_session(self._settings)
        return self._session

    async def close(self) -> None:
        """Close the session if the fetcher created it; safe to call twice."""
        if self._owns_session and self._session is not None and not self._session.closed:
            await self._session.close()

    async def fetch(
        self, request: Request, *, headers: Mapping[str, str] | None = None
    ) -> Response:
        """Fetch one request, following redirects.

        ``headers`` go with the first request only (a revisit's ``If-None-Match`` and
        ``If-Modified-Since``); a ``304 Not Modified`` answer then comes back as a response
        with status 304 and an empty body, not as an error.

        Raises:
            PermanentFetchError: 4xx, robots.txt, scope, redirect loop or chain too long,
                body too large, content type refused, URL too long, DNS name unknown.
            BlockedError: 429 or 503 with Retry-After after the retries, or at once when
                the server asks for a wait longer than ``backoff_max``; also while the
                host's robots.txt is unreachable.
            RetryableFetchError: timeouts, connection errors, 5xx, failing proxies, after
                the retries.
        """
        origin = request.url
        started = time.perf_counter()
        self._check_target(origin, origin)
        await self._check_robots(origin, origin)
        current = origin
        redirects: list[str] = []  # the URLs strictly between origin and final_url
        hops = 0
        while True:
            answer = await self._exchange(origin, current, headers if current == origin else None)
            if isinstance(answer, _Answer):
                break
            target = self._redirect_target(origin, current, answer.location)
            if target in (origin, current) or target in redirects:
                raise RedirectLoop(origin, f"redirect from {current} loops back to {target}")
            if hops >= self._settings.max_redirects:
                raise TooManyRedirects(
                    origin, f"more than {self._settings.max_redirects} redirects"
                )
            hops += 1
            self._check_target(origin, target)
            await self._check_robots(origin, target)
            if current != origin:
                redirects.append(current)
            current = target
        text = encoding = None
        if self._decode and self._is_text(answer.content_type):
            decoded = decode_body(answer.body, declared=answer.charset)
            text, encoding = decoded.text, decoded.encoding
        return Response(
            url=origin,
            final_url=current,
            status=answer.status,
            headers=answer.headers,
            body=answer.body,
            content_type=answer.content_type,
            encoding=encoding,
            text=text,
            charset=answer.charset,
            fetched_at=time.time(),
            elapsed=time.perf_counter() - started,
            redirects=tuple(redirects),
        )

    def _check_target(self, origin: str, url: str) -> None:
        if len(url) > self._max_url:
            raise UrlTooLong(origin, f"URL of {len(url)} characters is over {self._max_url}")
        if self._scope is not None and not self._scope.allows(url):
            raise OutOfScope(origin, f"{url} is out of scope")

    async def _check_robots(self, origin: str, url: str) -> None:
        if self.robots is None:
            return
        decision = await self.robots.decide(url)
        if decision.allowed:
            return
        if decision.retry_after is not None:
            raise BlockedError(
                origin,
                f"robots.txt of {url} is unreachable",
                kind=ErrorKind.ROBOTS,
                retry_after=decision.retry_after,
            )
        raise RobotsDisallowed(origin, f"robots.txt disallows {url}")

    def _redirect_target(self, origin: str, current: str, location: str) -> str:
        try:
            return canonicalize(urljoin(current, location.strip()))
        except InvalidUrl as exc:
            raise OutOfScope(origin, f"redirect to an unfetchable URL {location[:200]!r}") from exc

    async def _exchange(
        self, origin: str, url: str, extra: Mapping[str, str] | None = None
    ) -> _Answer | _Redirect:
        """One URL's request, retried on transient failures."""
        retries = self._settings.retries
        attempt = 0
        switches = 0
        while True:
            if self.before_request is not None:
                await self.before_request(url)
            proxy = self._proxies.choose() if self._proxies is not None else None
            try:
                return await self._watched_attempt(origin, url, proxy, extra)
            except RetryableFetchError as exc:
                wait = exc.retry_after if isinstance(exc, BlockedError) else None
                if wait is not None and wait > self._settings.backoff_max:
                    logger.info("%s asks for a %.0fs wait: handing back", url, wait)
                    raise
                if exc.kind is ErrorKind.PROXY and switches < _PROXY_SWITCHES:
                    switches += 1
                    continue
                if attempt >= retries:
                    raise
                if wait is None:
                    ceiling = self._settings.backoff_base * 2.0**attempt
                    wait = self._rng.uniform(0.0, min(self._settings.backoff_max, ceiling))
                attempt += 1
                logger.debug(
                    "retry %d/%d of %s in %.2fs: %s", attempt, retries, url, wait, exc.message
                )
                await self._sleep(wait)

    async def _watched_attempt(
        self, origin: str, url: str, proxy: str | None, extra: Mapping[str, str] | None = None
    ) -> _Answer | _Redirect:
        """One HTTP request under our own watchdog: whatever aiohttp's timeouts do (a read
        of a response queued on a poisoned connection escaped them, issue #26), the attempt
        ends shortly after ``timeout``."""
        try:
            async with asyncio.timeout(self._watchdog):
                return await self._attempt(origin, url, proxy, extra)
        except TimeoutError as exc:
            self._proxy_failed(proxy)
            raise RetryableFetchError(
                origin, f"no answer from {url} within {self._watchdog:.0f}s", kind=ErrorKind.TIMEOUT
            ) from exc

    async def _attempt(
        self, origin: str, url: str, proxy: str | None, extra: Mapping[str, str] | None = None
    ) -> _Answer | _Redirect:
        """One HTTP request; aiohttp's failures are turned into the crawler's errors."""
        started = time.perf_counter()
        target = _request_url(origin, url)
        sent = self._headers if not extra else {**(self._headers or {}), **extra}
        try:
            async with self.session.get(
                target,
                allow_redirects=False,
                headers=sent,
                timeout=self._timeout,
                proxy=proxy,
            ) as response:
                if proxy is not None:
                    assert self._proxies is not None
                    self._proxies.report(proxy, latency=time.perf_counter() - started, ok=True)
                try:
                    return await self._answer(origin, response)
                except BaseException as exc:
                    # An exchange that went wrong with its body unread or half read (a
                    # watchdog's cancel, a broken body) leaves the connection in an unknown
                    # state: never reuse it. A drained 404 keeps its connection.
                    if not isinstance(exc, FetchError) or not response.content.is_eof():
                        response.close()
                    raise
        except FetchError:
            raise
        except TimeoutError as exc:
            self._proxy_failed(proxy)
            raise RetryableFetchError(
                origin, f"timed out fetching {url}", kind=ErrorKind.TIMEOUT
            ) from exc
        except (aiohttp.ClientProxyConnectionError, aiohttp.ClientHttpProxyError) as exc:
            self._proxy_failed(proxy)
            raise RetryableFetchError(
                origin, f"proxy failed: {exc.__class__.__name__}", kind=ErrorKind.PROXY
            ) from exc
        except aiohttp.ClientConnectorDNSError as exc:
            if proxy is not None:  # the proxy's own name did not resolve
                self._proxy_failed(proxy)
                raise RetryableFetchError(
                    origin, f"proxy host {exc.host} did not resolve", kind=ErrorKind.PROXY
                ) from exc
            error = exc.os_error
            if error.errno in _NO_SUCH_NAME:
                raise PermanentFetchError(
                    origin, f"no such host: {exc.host}", kind=ErrorKind.DNS
                ) from exc
            raise RetryableFetchError(
                origin, f"DNS lookup of {exc.host} failed", kind=ErrorKind.DNS
            ) from exc
        except (aiohttp.ClientConnectorCertificateError, aiohttp.ClientSSLError) as exc:
            raise PermanentFetchError(
                origin, f"TLS failed: {exc}", kind=ErrorKind.CONNECTION
            ) from exc
        except aiohttp.InvalidURL as exc:
            raise PermanentFetchError(
                origin, f"aiohttp refused the URL {url}", kind=ErrorKind.OTHER
            ) from exc
        except aiohttp.ClientError as exc:
            # Refused or reset connections, servers hanging up, truncated or garbled bodies.
            self._proxy_failed(proxy)
            raise RetryableFetchError(
                origin, f"{exc.__class__.__name__}: {exc}", kind=ErrorKind.CONNECTION
            ) from exc

    def _proxy_failed(self, proxy: str | None) -> None:
        if proxy is not None and self._proxies is not None:
            self._proxies.report(proxy, latency=None, ok=False)

    async def _answer(self, origin: str, response: aiohttp.ClientResponse) -> _Answer | _Redirect:
        status = response.status
        headers = response.headers
        if status >= 300:
            # Read a small error or redirect body so the connection goes back to the pool.
            await _drain(response)
        if status == 304:  # only a conditional request (a revisit) gets one
            return _Answer(
                status=304, headers=headers, body=b"", content_type="text/html", charset=None
            )
        if status in _REDIRECTS:
            location = headers.get("Location")
            if location:
                return _Redirect(location)
            raise PermanentFetchError(
                origin, f"{status} redirect without a Location", kind=ErrorKind.OTHER, status=status
            )
        if status == 429:
            raise BlockedError(
                origin,
                "429 Too Many Requests",
                status=status,
                retry_after=parse_retry_after(headers.get("Retry-After")),
            )
        if status >= 500:
            wait = parse_retry_after(headers.get("Retry-After")) if status == 503 else None
            if wait is not None:
                raise BlockedError(
                    origin,
                    "503 with Retry-After",
                    kind=ErrorKind.HTTP_SERVER,
                    status=status,
                    retry_after=wait,
                )
            raise RetryableFetchError(
                origin, f"server error {status}", kind=ErrorKind.HTTP_SERVER, status=status
            )
        if status == 404:
            raise PermanentFetchError(
                origin, "404 Not Found", kind=ErrorKind.HTTP_NOT_FOUND, status=status
            )
        if status >= 400:
            raise PermanentFetchError(
                origin, f"client error {status}", kind=ErrorKind.HTTP_CLIENT, status=status
            )
        declared = "Content-Type" in headers
        content_type = response.content_type  # lower-cased media type, without parameters
        if declared and not self._accepts(content_type):
            response.close()  # drop the connection rather than download the body
            raise ContentTypeRejected(
                origin, f"content type {content_type!r} is not accepted", status=status
            )
        body = await self._read_body(origin, response)
        if not declared:
            # No Content-Type: believe the body if it looks like HTML, refuse it otherwise.
            content_type = "text/html" if _looks_like_html(body) else "application/octet-stream"
            if not self._accepts(content_type):
                raise ContentTypeRejected(
                    origin, "no Content-Type and the body is not HTML", status=status
                )
        return _Answer(
            status=status,
            headers=headers,
            body=body,
            content_type=content_type,
            charset=response.charset if declared else None,
        )

    async def _read_body(self, origin: str, response: aiohttp.ClientResponse) -> bytes:
        """The body, decompressed, refused as soon as it passes the size cap."""
        cap = self._max_body
        length = response.content_length
        if length is not None and length > cap:
            response.close()
            raise BodyTooLarge(
                origin,
                f"Content-Length {length} is over the {cap}-byte cap",
                status=response.status,
            )
        encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
        if length is not None and encoding == "identity":
            # aiohttp stops at Content-Length, which is under the cap: read in one go.
            return await response.read()
        # Compressed or unknown length: decompressed chunks arrive bounded in size, and a
        # gzip bomb is cut off at the cap without ever being held whole.
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.content.iter_any():
            size += len(chunk)
            if size > cap:
                response.close()
                raise BodyTooLarge(
                    origin,
                    f"body is over the {cap}-byte cap after decompression",
                    status=response.status,
                )
            chunks.append(chunk)
        return b"".join(chunks)

    def _accepts(self, content_type: str) -> bool:
        return content_type in self._accept_exact or (
            bool(self._accept_prefixes) and content_type.startswith(self._accept_prefixes)
        )

    @staticmethod
    def _is_text(content_type: str) -> bool:
        return (
            content_type.startswith("text/")
            or content_type in _TEXT_TYPES
            or content_type.endswith(("+xml", "+json"))
        )


def _request_url(origin: str, url: str) -> URL:
    """The URL for aiohttp; a canonical URL is already percent-encoded, so yarl's re-quoting
    is skipped. yarl checks host and port lazily: they are looked at here, where a bad one
    becomes a permanent error instead of a crash inside aiohttp."""
    try:
        target = URL(url, encoded=True) if url.isascii() and " " not in url else URL(url)
        valid = bool(target.host) and target.port is not None
    except ValueError as exc:
        raise PermanentFetchError(
            origin, f"invalid URL {url[:200]}: {exc}", kind=ErrorKind.OTHER
        ) from exc
    if not valid:
        raise PermanentFetchError(origin, f"URL without a host: {url[:200]}", kind=ErrorKind.OTHER)
    return target


async def _drain(response: aiohttp.ClientResponse) -> None:
    """Read a small body we do not want, so that its keep-alive connection can be reused."""
    length = response.content_length
    if length is None or length > _DRAIN_BYTES:
        response.close()
        return
    try:
        await response.read()
    except (aiohttp.ClientError, TimeoutError) as exc:
        # The status and headers are all we needed; only the connection is lost.
        logger.debug("dropped the connection after %d: %s", response.status, exc)
        response.close()


def _looks_like_html(body: bytes) -> bool:
    head = body[:1024].lstrip().lower()
    return any(marker in head for marker in _HTML_MARKERS)
