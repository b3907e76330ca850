"""Microblog accounts over the Mastodon API: search, following lists and account timelines.

:class:`AccountsClient` extends :class:`~topicrawl.sources.microblog.MastodonClient` (same rate
limit handling: ``X-RateLimit-*`` headers and 429 ``Retry-After``; same error classes) with::

    GET /api/v1/accounts/search?q=&limit=&offset=      -> accounts (offset paging)
    GET /api/v1/accounts/{id}/following?limit=          -> accounts (Link rel="next" paging)
    GET /api/v1/accounts/{id}/statuses?limit=&max_id=   -> statuses (Link, else max_id paging)

Every list is capped by the caller's ``max_*`` and by a page count, so a server that pages
forever (a Link header pointing back at itself, ids that never shrink) stops the client.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urljoin

from topicrawl.core.errors import ConfigError
from topicrawl.sources.microblog import (
    MalformedResponse,
    MastodonClient,
    Post,
    _next_link,
    post_from_status,
)

__all__ = ["Account", "AccountsClient", "TimelineEntry", "account_from_json"]

_MAX_PAGES = 200  # no list is read past this many pages, whatever the server says
_ACCOUNT_PAGE = 80  # Mastodon's largest page of accounts
_STATUS_PAGE = 40
_NAME_CHARS = 200
_NOTE_CHARS = 2_000


@dataclass(frozen=True, slots=True)
class Account:
    """A microblog account as topicrawl keeps it (counts are the server's own)."""

    id: str
    username: str
    display_name: str
    acct: str = ""
    note: str = ""
    followers: int = 0
    following: int = 0
    statuses: int = 0
    url: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        """The names a person would match against: display name, then username."""
        return tuple(n for n in (self.display_name, self.username) if n)


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    """A status on an account's timeline: its own post, or a repost (``post`` is the original)."""

    post: Post
    repost: bool


def _count(body: Mapping[str, Any], key: str) -> int:
    value = body.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{key} must be a number")
    return max(0, int(value))


def account_from_json(body: object) -> Account:
    """An :class:`Account` from a Mastodon ``Account`` JSON object.

    Raises:
        TypeError: not a JSON object, or a field of the wrong type.
        ValueError: the id is missing or a count is malformed.
    """
    if not isinstance(body, dict):
        raise TypeError("an account must be a JSON object")
    account_id = body.get("id")
    if not isinstance(account_id, str | int) or isinstance(account_id, bool) or account_id == "":
        raise ValueError("account id missing")
    texts = {}
    for key in ("username", "display_name", "acct", "note", "url"):
        value = body.get(key) or ""
        if not isinstance(value, str):
            raise TypeError(f"{key} must be a string")
        texts[key] = value
    return Account(
        id=str(account_id)[:64],
        username=texts["username"][:_NAME_CHARS],
        display_name=texts["display_name"][:_NAME_CHARS],
        acct=texts["acct"][:_NAME_CHARS],
        note=texts["note"][:_NOTE_CHARS],
        followers=_count(body, "followers_count"),
        following=_count(body, "following_count"),
        statuses=_count(body, "statuses_count"),
        url=texts["url"][:2000],
    )


class AccountsClient(MastodonClient):
    """:class:`MastodonClient` plus account search, following lists and account timelines."""

    async def search_accounts(self, query: str, *, limit: int = 20) -> list[Account]:
        """Accounts whose names the server finds for ``query``, best first, at most ``limit``."""
        if not query.strip():
            raise ConfigError("an account search needs a non-empty query")
        params = {"q": query.strip()[:200], "resolve": "false"}
        items = self._items("api/v1/accounts/search", params, limit, _ACCOUNT_PAGE, offset=True)
        return [_account(item, "account search") async for item in items]

    async def following(self, account_id: str, *, max_accounts: int = 200) -> list[Account]:
        """The accounts ``account_id`` follows, in the server's order, at most ``max_accounts``."""
        path = f"api/v1/accounts/{quote(account_id, safe='')}/following"
        items = self._items(path, {}, max_accounts, _ACCOUNT_PAGE)
        return [_account(item, path) async for item in items]

    async def statuses(self, account_id: str, *, max_posts: int = 200) -> list[TimelineEntry]:
        """The account's timeline, newest first: its posts and reposts, at most ``max_posts``."""
        path = f"api/v1/accounts/{quote(account_id, safe='')}/statuses"
        entries = []
        async for item in self._items(path, {}, max_posts, _STATUS_PAGE):
            try:
                post = post_from_status(item, source=self.source)
            except (TypeError, ValueError) as exc:
                raise MalformedResponse(path, f"bad status: {exc}") from exc
            entries.append(TimelineEntry(post, repost=isinstance(item.get("reblog"), dict)))
        return entries

    async def _items(
        self,
        path: str,
        params: Mapping[str, str],
        max_items: int,
        page_size: int,
        *,
        offset: bool = False,
    ) -> AsyncIterator[dict[str, Any]]:
        """JSON objects of a paged list: Link ``rel="next"``, else ``max_id`` (or ``offset``).

        A Link header without ``next`` ends the list; without any Link header a page shorter
        than the longest seen so far does (a server may cap pages below the asked limit).
        """
        if max_items < 1:
            return
        base = urljoin(self.base_url, path)
        url = base
        query: dict[str, str] | None = dict(params)
        seen: set[str] = set()
        given = largest = 0
        for _ in range(_MAX_PAGES):
            asked = min(page_size, max_items - given)
            if query is not None:
                query["limit"] = str(asked)
            body, link = await self._get_json(url, query)
            if not isinstance(body, list):
                raise MalformedResponse(url, "expected a JSON list")
            fresh = 0
            for item in body:
                if not isinstance(item, dict):
                    raise MalformedResponse(url, "expected a list of JSON objects")
                key = str(item.get("id"))
                if key in seen:
                    continue
                seen.add(key)
                fresh += 1
                yield item
                given += 1
                if given >= max_items:
                    return
            if fresh == 0:
                return  # an empty page, or one the server repeated: the list is over
            next_url = _next_link(link, url)
            largest = max(largest, len(body))
            if next_url is not None:
                url, query = next_url, None
            elif link:
                return  # the server pages with Link headers and names no next page
            elif len(body) < min(asked, largest):
                return  # a short page: the last one (a server may cap pages below ``asked``)
            elif offset:
                url, query = base, {**params, "offset": str(given)}
            else:
                url, query = base, {**params, "max_id": str(body[-1].get("id"))}


def _account(item: object, where: str) -> Account:
    try:
        return account_from_json(item)
    except (TypeError, ValueError) as exc:
        raise MalformedResponse(where, f"bad account: {exc}") from exc
