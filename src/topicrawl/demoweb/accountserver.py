"""Serves an :class:`~topicrawl.demoweb.accounts.AccountWorld` as a Mastodon-compatible API.

Routes (JSON, on loopback only)::

    GET /api/v1/accounts/search?q=&limit=&offset=   words (Latin) or character pairs (Chinese)
                                                     of the query found in an account's names,
                                                     most first, then most followed
    GET /api/v1/accounts/{id}
    GET /api/v1/accounts/{id}/following?limit=&max_id=   Link rel="next" paging
    GET /api/v1/accounts/{id}/statuses?limit=&max_id=&since_id=   newest first, Link paging;
                                                     a repost carries its original in "reblog"

Every answer has ``X-RateLimit-Limit/Remaining/Reset``; past the limit (per client address and
window) the server answers 429 with ``Retry-After``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlencode

from aiohttp import web as aioweb

from topicrawl.core.errors import ConfigError
from topicrawl.demoweb.accounts import AccountWorld, DemoAccount, DemoStatus
from topicrawl.demoweb.microblog import MicroPost, status_json
from topicrawl.demoweb.ratelimit import RateWindow
from topicrawl.demoweb.threaded import ThreadedServer, serve_app

__all__ = ["AccountServer", "search_tokens"]

_WORD = re.compile(r"[^\W_]+")
_CJK = re.compile(r"[\u4e00-\u9fff]+")
_MAX_ACCOUNTS = 80
_MAX_STATUSES = 40


def search_tokens(text: str) -> set[str]:
    """Latin words (lower case) and Chinese character pairs (a lone character alone)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    out = {w for w in _WORD.findall(_CJK.sub(" ", text)) if w}
    for run in _CJK.findall(text):
        out.update({run} if len(run) == 1 else {run[k : k + 2] for k in range(len(run) - 1)})
    return out


def _near(query: str, token: str) -> bool:
    """A search hit: the token starts with the query word, or both start with the same four
    letters (so a one-letter typo further in is still found, as search engines do)."""
    return token.startswith(query) or (len(query) >= 5 and token[:4] == query[:4])


def _int(request: aioweb.Request, name: str, default: int | None) -> int | None:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise aioweb.HTTPBadRequest(
            text=f'{{"error": "{name} must be an integer"}}', content_type="application/json"
        ) from exc


class AccountServer(ThreadedServer):
    """The demo accounts API on a loopback address (see the module docstring).

    Args:
        world: what to serve.
        host: loopback address; ``port`` 0 for an ephemeral one.
        rate_limit: requests allowed per ``rate_window`` seconds per client.
        max_page: the most accounts (statuses: half of it, at least one) a page holds,
            whatever ``limit`` asks (Mastodon: 80 and 40).
        clock: the time now (epoch seconds, e.g. a simulated clock's): statuses created after
            it are not served yet, so a revisit finds the posts made since the last one.
            Default: every status is served.
    """

    thread_name = "demo-accounts"

    def __init__(
        self,
        world: AccountWorld,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        rate_limit: int = 300,
        rate_window: float = 300.0,
        max_page: int = _MAX_ACCOUNTS,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if not host.startswith("127."):
            raise ConfigError("the demo microblog listens on loopback (127.0.0.0/8) only")
        if rate_limit < 1 or not rate_window > 0 or max_page < 1:
            raise ConfigError("rate_limit and max_page must be >= 1 and rate_window > 0")
        self._max_accounts = min(max_page, _MAX_ACCOUNTS)
        self._max_statuses = max(1, min(max_page // 2, _MAX_STATUSES))
        self.world = world
        self._clock = clock
        self._host, self._port = host, port
        self._limit = RateWindow(rate_limit, rate_window)
        self._runner: aioweb.AppRunner | None = None
        self._base = ""
        self._tokens = {
            a.id: search_tokens(f"{a.display_name} {a.username}") for a in world.accounts.values()
        }

    @property
    def base_url(self) -> str:
        if not self._base:
            raise RuntimeError("the demo accounts server has not been started")
        return self._base

    async def start(self) -> str:
        if self._runner is not None:
            raise RuntimeError("the demo accounts server is already started")
        app = aioweb.Application(middlewares=[self._rate_middleware])
        app.router.add_get("/api/v1/accounts/search", self._search)
        app.router.add_get("/api/v1/accounts/{id}", self._account)
        app.router.add_get("/api/v1/accounts/{id}/following", self._following)
        app.router.add_get("/api/v1/accounts/{id}/statuses", self._statuses)
        runner, port = await serve_app(app, self._host, self._port)
        self._runner = runner
        self._base = f"http://{self._host}:{port}/"
        return self._base

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    # -- rate limit ---------------------------------------------------------------------------

    @property
    def requests(self) -> int:
        """Requests received (refused ones too)."""
        return self._limit.requests

    @property
    def rejected(self) -> int:
        """Requests refused with a 429."""
        return self._limit.rejected

    @aioweb.middleware
    async def _rate_middleware(
        self, request: aioweb.Request, handler: Any
    ) -> aioweb.StreamResponse:
        headers, allowed = self._limit.hit(request.remote or "?")
        if not allowed:
            return aioweb.json_response({"error": "Too many requests"}, status=429, headers=headers)
        response: aioweb.StreamResponse = await handler(request)
        response.headers.update(headers)
        return response

    # -- routes -------------------------------------------------------------------------------

    def _account_json(self, account: DemoAccount) -> dict[str, Any]:
        world = self.world
        return {
            "id": account.id,
            "username": account.username,
            "acct": account.username,
            "display_name": account.display_name,
            "note": "",
            "url": f"{self._base}@{quote(account.username)}",
            "followers_count": world.followers_count[account.id],
            "following_count": len(world.following[account.id]),
            "statuses_count": len(world.statuses[account.id]),
        }

    def _status_json(self, status: DemoStatus) -> dict[str, Any]:
        author = self.world.accounts[status.account]
        post = MicroPost(
            id=status.id,
            topic=None,
            period=0,
            created_at=status.created_at,
            author=author.username,
            lang=status.lang,
            text=status.text,
            tags=(),
            mentions=(),
            links=(),
            reposts=status.reposts,
            likes=status.likes,
            comments=status.comments,
        )
        body = status_json(post, self._base)
        body["account"] = self._account_json(author)
        original = self.world.post(status.reblog_of) if status.reblog_of is not None else None
        body["reblog"] = self._status_json(original) if original is not None else None
        if original is not None:
            body["content"] = ""
        return body

    def _find(self, request: aioweb.Request) -> DemoAccount:
        account = self.world.accounts.get(request.match_info["id"])
        if account is None:
            raise aioweb.HTTPNotFound(
                text='{"error": "Record not found"}', content_type="application/json"
            )
        return account

    async def _search(self, request: aioweb.Request) -> aioweb.Response:
        query = search_tokens(request.query.get("q", "")[:200])
        limit = min(self._max_accounts, max(1, _int(request, "limit", 40) or 40))
        offset = max(0, _int(request, "offset", 0) or 0)
        scored = []
        for account_id, tokens in self._tokens.items():
            hits = sum(1 for q in query if any(_near(q, t) for t in tokens))
            if hits:
                followers = self.world.followers_count[account_id]
                scored.append((-hits, -followers, account_id))
        scored.sort()
        page = [self.world.accounts[a] for _, _, a in scored[offset : offset + limit]]
        return aioweb.json_response([self._account_json(a) for a in page])

    async def _account(self, request: aioweb.Request) -> aioweb.Response:
        return aioweb.json_response(self._account_json(self._find(request)))

    async def _following(self, request: aioweb.Request) -> aioweb.Response:
        account = self._find(request)
        followed = self.world.following[account.id]
        # Mastodon pages follows by the follow record's id, newest first: here n .. 1.
        limit = min(self._max_accounts, max(1, _int(request, "limit", 40) or 40))
        max_id = _int(request, "max_id", None)
        records = [(len(followed) - k, b) for k, b in enumerate(followed)]
        chosen = [(r, b) for r, b in records if max_id is None or r < max_id]
        page = chosen[:limit]
        body = [self._account_json(self.world.accounts[b]) for _, b in page]
        more = str(page[-1][0]) if len(chosen) > limit else None
        return self._with_link(request, body, more, str(page[0][0]) if page else None)

    async def _statuses(self, request: aioweb.Request) -> aioweb.Response:
        account = self._find(request)
        limit = min(self._max_statuses, max(1, _int(request, "limit", 20) or 20))
        max_id = _int(request, "max_id", None)
        since_id = _int(request, "since_id", None)
        now = self._clock() if self._clock is not None else float("inf")
        chosen = [
            s
            for s in self.world.statuses[account.id]
            if (max_id is None or s.id < max_id)
            and (since_id is None or s.id > since_id)
            and s.created_at <= now
        ]
        page = chosen[:limit]
        body = [self._status_json(s) for s in page]
        more = str(page[-1].id) if len(chosen) > limit else None
        return self._with_link(request, body, more, str(page[0].id) if page else None)

    def _with_link(
        self,
        request: aioweb.Request,
        body: list[dict[str, Any]],
        next_max: str | None,
        prev_min: str | None,
    ) -> aioweb.Response:
        """The page, with Mastodon's Link header: ``next`` while more remain, ``prev`` on
        every non-empty page (so a client knows this server pages by Link headers)."""
        response = aioweb.json_response(body)
        query = {k: v for k, v in request.query.items() if k not in {"max_id", "min_id"}}
        path = f"{self._base}{request.path.lstrip('/')}"
        links = []
        if next_max is not None:
            links.append(f'<{path}?{urlencode({**query, "max_id": next_max})}>; rel="next"')
        if prev_min is not None:
            links.append(f'<{path}?{urlencode({**query, "min_id": prev_min})}>; rel="prev"')
        if links:
            response.headers["Link"] = ", ".join(links)
        return response
