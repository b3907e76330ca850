"""Microblog posts over the Mastodon API: keyword search and hashtag timelines.

:class:`MastodonClient` talks to any Mastodon-compatible server (a real instance, with or
without an access token, or topicrawl's demo microblog): ``GET /api/v2/search`` with
``type=statuses`` and ``GET /api/v1/timelines/tag/{hashtag}``, newest first, following the
``Link: <...>; rel="next"`` header (or ``max_id`` when a server sends none). Each status becomes
a :class:`Post` with its HTML stripped to text and its links listed. Reblogs, favourites and
replies are the repost, like and comment counts that topic heat is computed from.

Rate limits are honoured: when ``X-RateLimit-Remaining`` reaches 0 the next request waits until
``X-RateLimit-Reset``; a 429 waits ``Retry-After`` (or until the reset) and is retried. Errors
are :class:`~topicrawl.core.errors.FetchError` subclasses: :class:`BlockedError` when the
server keeps refusing, :class:`RetryableFetchError` for 5xx and connection failures,
:class:`PermanentFetchError` for other 4xx, :class:`MalformedResponse` for bodies that are
not the JSON the API promises.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime
from types import TracebackType
from typing import Any, Self
from urllib.parse import quote, urljoin, urlsplit

import aiohttp
from selectolax.lexbor import LexborHTMLParser

from topicrawl.core.errors import (
    BlockedError,
    ConfigError,
    PermanentFetchError,
    RetryableFetchError,
)
from topicrawl.core.models import ErrorKind
from topicrawl.topics.ahp import PostEngagement

__all__ = [
    "MAX_TEXT_CHARS",
    "MalformedResponse",
    "MastodonClient",
    "Post",
    "RateLimit",
    "html_to_text",
]

_log = logging.getLogger(__name__)

MAX_TEXT_CHARS = 20_000  # a post's text is cut here: statuses are short, hostile ones are not
_MAX_HTML_CHARS = 200_000
_MAX_LINKS = 50
_PAGE_LIMIT = 40  # Mastodon's largest page
_LINK_NEXT = re.compile(r'<([^>]{1,4000})>\s*;\s*rel="?next"?', re.IGNORECASE)
_BLOCK_END = re.compile(r"<br\s*/?>|</p\s*>", re.IGNORECASE)
_SPACES = re.compile(r"[ \t\r\f\v]+")


class MalformedResponse(PermanentFetchError):
    """The server answered, but not with the JSON the Mastodon API describes."""

    default_kind = ErrorKind.PARSE


@dataclass(frozen=True, slots=True)
class Post:
    """A microblog status as topicrawl keeps it.

    ``created_at`` is seconds since the epoch (UTC); ``links`` are the URLs the post links to
    (not its hashtag and mention links); ``source`` is the server's host.
    """

    id: str
    text: str
    created_at: float
    author: str
    reposts: int
    likes: int
    comments: int
    url: str
    links: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    lang: str | None = None
    source: str = ""

    @property
    def engagement(self) -> PostEngagement:
        """Repost, like and comment counts for the heat formula."""
        return PostEngagement(reposts=self.reposts, likes=self.likes, comments=self.comments)

    @property
    def sort_key(self) -> int:
        """Mastodon ids are numeric and grow with time; a non-numeric id sorts first."""
        return int(self.id) if self.id.isdigit() else -1


@dataclass(frozen=True, slots=True)
class RateLimit:
    """The server's last rate-limit headers: requests allowed, left, and when they refill."""

    limit: int | None
    remaining: int | None
    reset_at: float | None  # epoch seconds


def html_to_text(content: str) -> tuple[str, tuple[str, ...]]:
    """Plain text of a status's HTML and the URLs it links to (not tags nor mentions).

    Line breaks and paragraph ends become newlines; markup is dropped, entities decoded. The
    HTML is cut at 200,000 characters and the text at :data:`MAX_TEXT_CHARS`.
    """
    content = _BLOCK_END.sub("\n", content[:_MAX_HTML_CHARS])
    tree = LexborHTMLParser(f"<body>{content}</body>")
    links: list[str] = []
    for anchor in tree.css("a[href]"):
        classes = (anchor.attributes.get("class") or "").split()
        rel = (anchor.attributes.get("rel") or "").split()
        href = (anchor.attributes.get("href") or "").strip()
        if "mention" in classes or "hashtag" in classes or "tag" in rel:
            continue
        if href.startswith(("http://", "https://")) and href not in links:
            links.append(href)
        if len(links) >= _MAX_LINKS:
            break
    body = tree.body
    text = body.text(separator="") if body is not None else ""
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return "\n".join(line for line in lines if line)[:MAX_TEXT_CHARS], tuple(links)


def _parse_time(value: object) -> float:
    if not isinstance(value, str):
        raise TypeError(f"created_at must be a string, got {type(value).__name__}")
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def _count(status: Mapping[str, Any], key: str) -> int:
    value = status.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{key} must be a number")
    return max(0, int(value))


def post_from_status(status: object, *, source: str = "") -> Post:
    """A :class:`Post` from one Mastodon ``Status`` JSON object; a reblog gives the original.

    Raises:
        TypeError: the status or a field has the wrong JSON type.
        ValueError: a required field is missing or malformed.
    """
    if not isinstance(status, dict):
        raise TypeError("a status must be a JSON object")
    original = status.get("reblog")
    if isinstance(original, dict):
        status = original
    post_id = status.get("id")
    if not isinstance(post_id, str | int) or isinstance(post_id, bool) or str(post_id) == "":
        raise ValueError("status id missing")
    content = status.get("content", "")
    if not isinstance(content, str):
        raise TypeError("content must be a string")
    text, links = html_to_text(content)
    account = status.get("account")
    author = ""
    if isinstance(account, dict):
        acct = account.get("acct") or account.get("username") or ""
        author = str(acct)[:200]
    tags = tuple(
        str(tag["name"])[:100]
        for tag in status.get("tags") or ()
        if isinstance(tag, dict) and isinstance(tag.get("name"), str)
    )
    url = status.get("url") or status.get("uri") or ""
    lang = status.get("language")
    return Post(
        id=str(post_id)[:64],
        text=text,
        created_at=_parse_time(status.get("created_at")),
        author=author,
        reposts=_count(status, "reblogs_count"),
        likes=_count(status, "favourites_count"),
        comments=_count(status, "replies_count"),
        url=str(url)[:2000],
        links=links,
        tags=tags,
        lang=str(lang)[:16] if isinstance(lang, str) else None,
        source=source,
    )


def _parse_reset(value: str | None) -> float | None:
    """``X-RateLimit-Reset``: an ISO 8601 time (Mastodon) or epoch seconds (other servers)."""
    if not value:
        return None
    value = value.strip()
    try:
        number = float(value)
    except ValueError:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return number if math.isfinite(number) else None


def _parse_retry_after(value: str | None, now: float) -> float | None:
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - now)
        except (TypeError, ValueError):
            return None
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _int_header(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


class MastodonClient:
    """An async client for the parts of the Mastodon API topicrawl reads.

    Args:
        base_url: the server, e.g. ``https://mastodon.social/``.
        token: an access token (sent as ``Authorization: Bearer``); public search works without
            one on servers that allow it (many limit unauthenticated search to hashtags).
        session: an aiohttp session to use (the client then does not close it).
        timeout: seconds for one request.
        retries: extra attempts for a 5xx, a connection failure or a 429.
        max_wait: the longest the client waits for a rate limit to reset; a longer wait raises
            :class:`BlockedError` instead.
        max_body: largest response body read, in bytes.
        sleep: how to wait (injected by tests); ``clock``: epoch seconds.

    Raises:
        ConfigError: ``base_url`` is not an http(s) URL.
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        session: aiohttp.ClientSession | None = None,
        timeout: float = 20.0,
        retries: int = 3,
        max_wait: float = 900.0,
        max_body: int = 8 * 2**20,
        user_agent: str = "topicrawl (+https://github.com/topicrawl)",
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in {"http", "https"} or not parts.netloc:
            raise ConfigError(f"microblog source must be an http(s) URL, got {base_url!r}")
        if retries < 0 or timeout <= 0 or max_wait < 0 or max_body < 1:
            raise ConfigError("retries >= 0, timeout > 0, max_wait >= 0, max_body >= 1 required")
        self.base_url = base_url if base_url.endswith("/") else base_url + "/"
        self.source = parts.netloc
        self._token = token
        self._session = session
        self._own_session = session is None
        self._timeout = timeout
        self._retries = retries
        self._max_wait = max_wait
        self._max_body = max_body
        self._user_agent = user_agent
        self._sleep = sleep
        self._clock = clock
        self._rate = RateLimit(None, None, None)
        self.requests = 0
        self.waited = 0.0

    @property
    def rate_limit(self) -> RateLimit:
        """The rate-limit headers of the last response."""
        return self._rate

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._own_session and self._session is not None:
            await self._session.close()
        self._session = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            headers = {"User-Agent": self._user_agent, "Accept": "application/json"}
            if self._token:
                headers["Authorization"] = f"Bearer {self._token}"
            self._session = aiohttp.ClientSession(
                headers=headers, timeout=aiohttp.ClientTimeout(total=self._timeout)
            )
            self._own_session = True
        return self._session

    # -- public API ----------------------------------------------------------------------------

    async def search(
        self, query: str, *, max_posts: int = 200, since_id: str | None = None
    ) -> list[Post]:
        """Statuses matching ``query``, newest first, at most ``max_posts``.

        ``since_id`` stops at (and leaves out) that status and older ones: pass the newest id
        seen last time to get only what is new.
        """
        if not query.strip():
            raise ConfigError("a microblog search needs a non-empty query")
        params = {"q": query, "type": "statuses", "resolve": "false"}
        return [
            post
            async for post in self._paginate(
                "api/v2/search", params, max_posts=max_posts, since_id=since_id, key="statuses"
            )
        ]

    async def hashtag(
        self, tag: str, *, max_posts: int = 200, since_id: str | None = None
    ) -> list[Post]:
        """The public timeline of ``#tag``, newest first, at most ``max_posts``."""
        name = tag.strip().strip("#")
        if not name:
            raise ConfigError("a hashtag timeline needs a non-empty tag")
        path = f"api/v1/timelines/tag/{quote(name, safe='')}"
        return [
            post async for post in self._paginate(path, {}, max_posts=max_posts, since_id=since_id)
        ]

    # -- pagination ----------------------------------------------------------------------------

    async def _paginate(
        self,
        path: str,
        params: Mapping[str, str],
        *,
        max_posts: int,
        since_id: str | None,
        key: str | None = None,
    ) -> AsyncIterator[Post]:
        if max_posts < 1:
            return
        base = urljoin(self.base_url, path)
        since = {"since_id": since_id} if since_id else {}
        url = base
        query: dict[str, str] | None = {**params, **since}
        seen: set[str] = set()
        yielded = 0
        while True:
            asked = min(_PAGE_LIMIT, max_posts - yielded)
            if query is not None:
                query["limit"] = str(asked)
            body, link = await self._get_json(url, query)
            statuses = body.get(key) if key is not None and isinstance(body, dict) else body
            if not isinstance(statuses, list):
                where = f" in {key!r}" if key else ""
                raise MalformedResponse(url, f"expected a list of statuses{where}")
            fresh = 0
            last_id: str | None = None
            reached_since = False
            for status in statuses:
                try:
                    post = post_from_status(status, source=self.source)
                except (TypeError, ValueError) as exc:
                    raise MalformedResponse(url, f"bad status: {exc}") from exc
                last_id = post.id
                if since_id and since_id.isdigit() and 0 <= post.sort_key <= int(since_id):
                    reached_since = True  # a server that ignores since_id stops here
                    break
                if post.id in seen:
                    continue
                seen.add(post.id)
                fresh += 1
                yield post
                yielded += 1
                if yielded >= max_posts:
                    return
            if reached_since or fresh == 0 or last_id is None:
                return
            next_url = _next_link(link, url)
            if next_url is not None:
                url, query = next_url, None
            elif len(statuses) >= asked:
                # No Link header (Mastodon's search sends none): page on with max_id.
                url, query = base, {**params, **since, "max_id": last_id}
            else:
                return  # a short page without a next link is the last one

    async def _get_json(self, url: str, params: Mapping[str, str] | None) -> tuple[Any, str | None]:
        """GET ``url`` and decode its JSON, honouring rate limits and retrying what may pass."""
        attempt = 0
        while True:
            await self._respect_limit(url)
            attempt += 1
            self.requests += 1
            try:
                async with self._client().get(url, params=params, allow_redirects=True) as resp:
                    self._remember_limit(resp.headers)
                    status = resp.status
                    if status == 429:
                        wait = self._blocked_wait(resp.headers)
                        if attempt > self._retries or wait > self._max_wait:
                            raise BlockedError(
                                url,
                                f"rate limited (429); retry in {wait:.0f} s",
                                status=429,
                                retry_after=wait,
                            )
                        await self._wait(wait)
                        continue
                    if status >= 500:
                        if attempt > self._retries:
                            raise RetryableFetchError(
                                url,
                                f"server error {status}",
                                kind=ErrorKind.HTTP_SERVER,
                                status=status,
                            )
                        await self._wait(min(30.0, 0.5 * 2 ** (attempt - 1)))
                        continue
                    if status >= 400:
                        kind = ErrorKind.HTTP_NOT_FOUND if status == 404 else ErrorKind.HTTP_CLIENT
                        hint = " (an access token may be needed)" if status in {401, 403} else ""
                        raise PermanentFetchError(
                            url, f"HTTP {status}{hint}", kind=kind, status=status
                        )
                    raw = await resp.content.read(self._max_body + 1)
                    link = resp.headers.get("Link")
            except (aiohttp.ClientError, TimeoutError) as exc:
                if attempt > self._retries:
                    raise RetryableFetchError(
                        url, f"cannot reach the microblog server: {exc!r}"
                    ) from exc
                await self._wait(min(30.0, 0.5 * 2 ** (attempt - 1)))
                continue
            if len(raw) > self._max_body:
                raise MalformedResponse(url, f"response larger than {self._max_body} bytes")
            try:
                return json.loads(raw.decode("utf-8")), link
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise MalformedResponse(url, f"response is not JSON: {exc}") from exc

    def _remember_limit(self, headers: Mapping[str, str]) -> None:
        limit = _int_header(headers.get("X-RateLimit-Limit"))
        remaining = _int_header(headers.get("X-RateLimit-Remaining"))
        reset = _parse_reset(headers.get("X-RateLimit-Reset"))
        if limit is not None or remaining is not None or reset is not None:
            self._rate = RateLimit(limit, remaining, reset)

    def _blocked_wait(self, headers: Mapping[str, str]) -> float:
        now = self._clock()
        retry_after = _parse_retry_after(headers.get("Retry-After"), now)
        if retry_after is not None:
            return retry_after
        if self._rate.reset_at is not None:
            return max(0.0, self._rate.reset_at - now)
        return 1.0

    async def _respect_limit(self, url: str) -> None:
        rate = self._rate
        if rate.remaining is None or rate.remaining > 0 or rate.reset_at is None:
            return
        wait = rate.reset_at - self._clock()
        if wait <= 0:
            return
        if wait > self._max_wait:
            raise BlockedError(
                url, f"rate limit spent; it resets in {wait:.0f} s", retry_after=wait
            )
        _log.info("microblog rate limit spent: waiting %.1f s for the reset", wait)
        await self._wait(wait)
        self._rate = RateLimit(rate.limit, None, None)

    async def _wait(self, seconds: float) -> None:
        self.waited += seconds
        await self._sleep(seconds)


def _next_link(header: str | None, current: str) -> str | None:
    """The ``rel="next"`` URL of a Link header, if it is on the same server."""
    if not header:
        return None
    match = _LINK_NEXT.search(header)
    if match is None:
        return None
    target = urljoin(current, str(match.group(1)).strip())
    if urlsplit(target).netloc != urlsplit(current).netloc:
        return None  # never follow a Link header off the server we were given
    return target
