"""Seeds from meta-search: a client for SearXNG's JSON API and reciprocal rank fusion.

SearXNG (``GET /search?q=...&format=json``) answers one list of results, each naming the
engines that returned it (``engines``) and its rank in each (``positions``, 1-based; the two
lists are not aligned, SearXNG keeps engines in a set, which is why the fusion only sums over
positions). The client ranks them afresh by reciprocal rank fusion (Cormack, Clarke and
Buettcher 2009): ``score(url) = sum over the engines that returned it of 1 / (k + rank)``,
``k`` = 60, so a page several engines agree on comes before one a single engine put first.
A result without positions counts with its rank in the answer's order among the results of
its engine. Results with the same canonical URL are merged.

Errors say what to do (the classes are the crawler's fetch errors, so the recovery is the
same): 429 is a :class:`~topicrawl.core.errors.BlockedError` (SearXNG's limiter or the
engines' own), 5xx and connection failures a :class:`~topicrawl.core.errors.RetryableFetchError`,
403 (the JSON format is not enabled in the instance's ``settings.yml``) and other 4xx a
:class:`~topicrawl.core.errors.PermanentFetchError`, and an answer that is not SearXNG's
JSON a :class:`MalformedSearchAnswer`. Answers are read up to ``max_bytes``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from yarl import URL

from topicrawl.core.errors import (
    BlockedError,
    BodyTooLarge,
    PermanentFetchError,
    RetryableFetchError,
)
from topicrawl.core.models import ErrorKind, Request
from topicrawl.fetch.client import parse_retry_after
from topicrawl.parse.urls import InvalidUrl, canonicalize

__all__ = [
    "RRF_K",
    "MalformedSearchAnswer",
    "SearchAnswer",
    "SearxClient",
    "SeedProposal",
    "fuse",
    "seed_requests",
]

RRF_K = 60
"""The fusion's rank constant (the value of the original paper, used by most systems)."""

_MAX_TEXT = 500  # characters of a title or snippet kept (crawled content is hostile)


class MalformedSearchAnswer(PermanentFetchError):
    """The search server did not answer SearXNG's JSON (HTML, truncated, another shape)."""

    default_kind = ErrorKind.DECODE


@dataclass(frozen=True, slots=True)
class SeedProposal:
    """A proposed seed: its canonical URL, fused score, the engines that returned it and its
    ranks there (best first; SearXNG does not say which rank is which engine's)."""

    url: str
    score: float
    engines: tuple[str, ...]
    positions: tuple[int, ...]
    title: str = ""
    snippet: str = ""


@dataclass(frozen=True, slots=True)
class SearchAnswer:
    """One query's answer: the raw results in order and the engines that did not answer."""

    query: str
    results: tuple[Mapping[str, Any], ...]
    unresponsive: tuple[str, ...] = ()
    skipped: int = 0  # results that were not objects with an http(s) URL


@dataclass(slots=True)
class _Merged:
    url: str
    title: str
    snippet: str
    ranks: dict[str, int] = field(default_factory=dict)  # per engine, or per "#n" position


def fuse(results: Sequence[Mapping[str, Any]], *, k: int = RRF_K) -> list[SeedProposal]:
    """Rank SearXNG results by reciprocal rank fusion (see the module docstring).

    The same URL in several results (several pages of an answer, several instances) counts
    each engine once, at its best rank. Results without a usable URL are left out; equal
    scores are ordered by URL, so the same answer always gives the same ranking.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    merged: dict[str, _Merged] = {}
    seen_per_engine: Counter[str] = Counter()
    for result in results:
        url = _url(result)
        if url is None:
            continue
        engines = _engines(result)
        seen_per_engine.update(engines)
        positions = sorted(p for p in result.get("positions") or () if _is_rank(p))
        entry = merged.get(url)
        if entry is None:
            entry = merged[url] = _Merged(url, _text(result, "title"), _text(result, "content"))
        if len(positions) != len(engines):  # no usable positions: the answer's own order
            positions = sorted(seen_per_engine[engine] for engine in engines)
        # Which position is which engine's is not known: the best goes with the first
        # engine, which changes no score (a sum over the positions).
        for engine, position in zip(engines, positions, strict=True):
            if engine not in entry.ranks or position < entry.ranks[engine]:
                entry.ranks[engine] = position
    proposals = [
        SeedProposal(
            url=entry.url,
            score=sum(1.0 / (k + rank) for rank in entry.ranks.values()),
            engines=tuple(sorted(entry.ranks)),
            positions=tuple(sorted(entry.ranks.values())),
            title=entry.title,
            snippet=entry.snippet,
        )
        for entry in merged.values()
    ]
    proposals.sort(key=lambda p: (-p.score, p.url))
    return proposals


def _is_rank(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _url(result: Mapping[str, Any]) -> str | None:
    url = result.get("url")
    if not isinstance(url, str) or len(url) > 4096:
        return None
    if not url[:8].lower().startswith(("http://", "https://")):
        return None
    try:
        return canonicalize(url)
    except InvalidUrl:
        return None


def _engines(result: Mapping[str, Any]) -> list[str]:
    engines = result.get("engines")
    names = engines if isinstance(engines, list) and engines else [result.get("engine")]
    found = {_clean(name)[:60] for name in names if isinstance(name, str) and name.strip()}
    return sorted(found) or ["unknown"]


def _text(result: Mapping[str, Any], key: str) -> str:
    value = result.get(key)
    return _clean(value)[:_MAX_TEXT] if isinstance(value, str) else ""


def _clean(text: str) -> str:
    """One line of printable text (no control characters: it goes to a terminal)."""
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())


class SearxClient:
    """Queries a SearXNG instance's JSON API.

    Args:
        base_url: the instance, e.g. ``http://127.0.0.1:8888/`` (``/search`` is added).
        session: an aiohttp session to use (the caller closes it); else one is made.
        timeout: seconds for one answer.
        max_bytes: the largest answer read.
        user_agent: the User-Agent header.
    """

    def __init__(
        self,
        base_url: str,
        *,
        session: aiohttp.ClientSession | None = None,
        timeout: float = 15.0,
        max_bytes: int = 4_000_000,
        user_agent: str = "topicrawl",
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"the SearXNG URL must be http(s), got {base_url[:100]!r}")
        self._endpoint = URL(base_url.rstrip("/") + "/search")
        self._session = session
        self._owns = session is None
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._max_bytes = max_bytes
        self._headers = {"User-Agent": user_agent, "Accept": "application/json"}

    async def __aenter__(self) -> SearxClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._owns and self._session is not None:
            await self._session.close()
            self._session = None

    async def search(
        self, query: str, *, page: int = 1, language: str | None = None
    ) -> SearchAnswer:
        """One page of results for ``query``.

        Raises:
            BlockedError: 429 (``retry_after`` from the answer, when it says).
            RetryableFetchError: 5xx, timeouts, refused or dropped connections.
            PermanentFetchError: other 4xx (403: JSON is not enabled on the instance).
            MalformedSearchAnswer: the answer is not SearXNG's JSON.
        """
        if not query.strip():
            raise ValueError("an empty query")
        params = {"q": query, "format": "json", "pageno": str(page)}
        if language:
            params["language"] = language
        url = self._endpoint.with_query(params)
        shown = str(url)
        if self._session is None:
            self._session = aiohttp.ClientSession()
        try:
            async with self._session.get(
                url, headers=self._headers, timeout=self._timeout, allow_redirects=True
            ) as response:
                _check_status(shown, response)
                body = await _read(shown, response, self._max_bytes)
        except TimeoutError as exc:
            raise RetryableFetchError(
                shown, "the search server did not answer in time", kind=ErrorKind.TIMEOUT
            ) from exc
        except aiohttp.ClientError as exc:
            raise RetryableFetchError(
                shown, f"cannot reach the search server: {type(exc).__name__}: {exc}"
            ) from exc
        return _answer(shown, query, body)

    async def seeds(
        self, query: str, *, limit: int = 20, pages: int = 1, language: str | None = None
    ) -> list[SeedProposal]:
        """The best ``limit`` seeds for ``query`` over ``pages`` pages of results, fused.

        Raises:
            as :meth:`search`.
        """
        if limit < 1 or pages < 1:
            raise ValueError("limit and pages must be >= 1")
        results: list[Mapping[str, Any]] = []
        offset: dict[str, int] = {}
        for page in range(1, pages + 1):
            answer = await self.search(query, page=page, language=language)
            if not answer.results:
                break
            deepest: dict[str, int] = {}
            for result in answer.results:
                # Later pages continue each engine's ranks instead of starting again at 1.
                positions = [p for p in result.get("positions") or () if _is_rank(p)]
                engines = _engines(result)
                if positions and offset:
                    base = max((offset.get(e, 0) for e in engines), default=0)
                    positions = [p + base for p in positions]
                for engine in engines:
                    deepest[engine] = max(deepest.get(engine, 0), max(positions, default=0))
                results.append({**result, "positions": positions} if positions else result)
            offset.update(deepest)
        return fuse(results)[:limit]


def seed_requests(proposals: Sequence[SeedProposal]) -> list[Request]:
    """Depth-0 requests for proposed seeds, best first (the fused score as priority)."""
    return [Request(url=p.url, score=p.score, reasons={"metasearch": p.score}) for p in proposals]


def _check_status(url: str, response: aiohttp.ClientResponse) -> None:
    status = response.status
    if status == 429:
        wait = parse_retry_after(response.headers.get("Retry-After"))
        after = f"; it asks to wait {wait:g} s" if wait is not None else ""
        raise BlockedError(
            url,
            f"the search server answered 429 Too Many Requests (its limiter or its engines'"
            f" rate limits){after}: wait, or query it less often",
            status=status,
            retry_after=wait,
        )
    if status >= 500:
        raise RetryableFetchError(
            url,
            f"the search server failed with {status}: try again later",
            kind=ErrorKind.HTTP_SERVER,
            status=status,
        )
    if status == 403:
        raise PermanentFetchError(
            url,
            "the search server refused the JSON API (403): enable it in SearXNG's settings.yml"
            " (search: formats: [html, json])",
            status=status,
        )
    if status >= 400:
        raise PermanentFetchError(url, f"the search server answered {status}", status=status)


async def _read(url: str, response: aiohttp.ClientResponse, cap: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(65_536):
        size += len(chunk)
        if size > cap:
            raise BodyTooLarge(url, f"the search answer is over {cap:,} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _answer(url: str, query: str, body: bytes) -> SearchAnswer:
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        start = body[:60].decode("utf-8", "replace")
        raise MalformedSearchAnswer(
            url,
            f"the search server did not answer JSON ({exc}; it began {start!r}): is it a"
            " SearXNG instance with the JSON format enabled?",
        ) from exc
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise MalformedSearchAnswer(
            url, "the search answer has no 'results' list: not SearXNG's JSON API"
        )
    kept = tuple(r for r in data["results"] if isinstance(r, dict) and _url(r) is not None)
    unresponsive = tuple(
        _clean(str(item[0]))[:60]
        for item in data.get("unresponsive_engines") or ()
        if isinstance(item, list | tuple) and item
    )
    return SearchAnswer(
        query=query,
        results=kept,
        unresponsive=unresponsive,
        skipped=len(data["results"]) - len(kept),
    )
