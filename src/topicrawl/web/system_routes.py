"""The video system's pages (``/videos``, ``/videos/plans``, ``/accounts``, ``/revisits``,
``/node-rounds``) and the JSON they show (the same paths under ``/api/``).

Unlike the live pages these are rendered on the server (Jinja2, autoescaped): sorting and
paging are links, so every crawled string reaches the browser as escaped text and the pages
work without script.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import HTMLResponse

from topicrawl.web.state import dashboard
from topicrawl.web.system_view import (
    LEADER_SCHEMA,
    MAX_PER_PAGE,
    OUTCOMES,
    Listing,
    accounts_data,
    node_rounds_data,
    plans_data,
    revisits_data,
    unavailable,
    videos_data,
)
from topicrawl.web.views import render_page

__all__ = ["system_router"]

system_router = APIRouter()

Sort = Annotated[str | None, Query(max_length=40)]
Order = Annotated[str, Query(pattern="^(asc|desc)$")]
Page = Annotated[int, Query(ge=1, le=1_000_000)]
Per = Annotated[int, Query(ge=1, le=MAX_PER_PAGE)]
Source = Annotated[str | None, Query(max_length=2000)]
Tier = Annotated[int | None, Query(ge=1, le=3)]


async def _read(
    request: Request, reader: Callable[[], Awaitable[dict[str, Any]]]
) -> dict[str, Any]:
    """The data, or why this database has none (its schema predates the tables)."""
    missing = unavailable(dashboard(request).version)
    if missing is not None:
        return missing
    try:
        return await reader()
    except ValueError as exc:
        raise HTTPException(status_code=400, detail=str(exc)) from exc


@dataclass(frozen=True, slots=True)
class Sorting:
    """A sorted listing's query: sort key (None: the listing's default), order, page, rows."""

    sort: str | None
    order: str
    page: int
    per: int

    def listing(self, default: str) -> Listing:
        return Listing(
            self.sort or default, descending=self.order == "desc", page=self.page, per=self.per
        )

    def params(self, **filters: Any) -> dict[str, Any]:
        """The query to keep in links (the default page size left out)."""
        per = self.per if self.per != 50 else None
        return {**filters, "sort": self.sort, "order": self.order, "per": per}


def sorting(sort: Sort = None, order: Order = "desc", page: Page = 1, per: Per = 50) -> Sorting:
    return Sorting(sort, order, page, per)


Sorted = Annotated[Sorting, Depends(sorting)]


Kept = Annotated[str | None, Query(pattern="^(yes|no|)$")]
Kind = Annotated[str | None, Query(max_length=40)]


@dataclass(frozen=True, slots=True)
class Shown:
    """What one listing shows: its data (the API's answer) and the parameters it was asked
    with (kept in the page's sort and paging links)."""

    data: dict[str, Any]
    params: dict[str, Any]


# -- the listings: each a dependency shared by its API route and its page -----------------------


async def videos_shown(
    request: Request,
    by: Sorted,
    source: Source = None,
    tier: Tier = None,
    kind: Kind = None,
) -> Shown:
    """Videos: extracted counts, popularity, tier, node, last and next visit."""
    engine = dashboard(request).engine
    listing = by.listing("popularity")
    data = await _read(
        request, lambda: videos_data(engine, listing, source=source, tier=tier, kind=kind or None)
    )
    return Shown(data, by.params(source=source, tier=tier, kind=kind))


async def plans_shown(
    request: Request, source: Source = None, page: Page = 1, per: Per = 20
) -> Shown:
    """The plans, newest first: tiers, moves since the plan before, node rounds closed."""
    engine = dashboard(request).engine
    data = await _read(request, lambda: plans_data(engine, source=source, page=page, per=per))
    return Shown(data, {"source": source, "per": per if per != 20 else None})


async def accounts_shown(
    request: Request,
    by: Sorted,
    source: Source = None,
    kept: Kept = None,
    tier: Tier = None,
) -> Shown:
    """Accounts: influence, tier, next visit; kept or dropped by the LDA filter, and why."""
    engine = dashboard(request).engine
    listing = by.listing("influence")
    keep = None if kept in {None, ""} else kept == "yes"
    data = await _read(
        request, lambda: accounts_data(engine, listing, source=source, kept=keep, tier=tier)
    )
    return Shown(data, by.params(source=source, kept=kept, tier=tier))


async def revisits_shown(
    request: Request,
    by: Sorted,
    source: Source = None,
    kind: Kind = None,
    outcome: Kind = None,
) -> Shown:
    """Revisits by kind and tier and by day (due against done), pending ones, single visits."""
    engine = dashboard(request).engine
    listing = by.listing("visited_at")
    data = await _read(
        request,
        lambda: revisits_data(
            engine, listing, source=source, kind=kind or None, outcome=outcome or None
        ),
    )
    return Shown(data, by.params(source=source, kind=kind, outcome=outcome))


async def rounds_shown(
    request: Request, source: Source = None, page: Page = 1, per: Per = 50
) -> Shown:
    """Each node's rounds and totals."""
    engine = dashboard(request).engine
    leaders = dashboard(request).version >= LEADER_SCHEMA
    data = await _read(
        request,
        lambda: node_rounds_data(engine, source=source, page=page, per=per, leaders=leaders),
    )
    return Shown(data, {"source": source, "per": per if per != 50 else None})


# -- the routes ---------------------------------------------------------------------------------


class Links:
    """Links of a listing page that keep its other parameters: sort headers and paging."""

    def __init__(self, path: str, params: dict[str, Any], data: dict[str, Any]) -> None:
        self.path = path
        self.params = {k: v for k, v in params.items() if v not in {None, ""}}
        if "sort" not in self.params and self.params.get("order") == "desc":
            del self.params["order"]  # the default: links stay short
        self.paging = data.get("paging") or {}

    def to(self, **changes: Any) -> str:
        merged = {**self.params, **changes}
        query = urlencode({k: v for k, v in merged.items() if v not in {None, ""}})
        return f"{self.path}?{query}" if query else self.path

    def sort(self, key: str) -> str:
        """The header link of column ``key``: sorts by it, flipping the order when it is the
        current one (descending first)."""
        current = self.paging.get("sort") == key and self.paging.get("order") == "desc"
        return self.to(sort=key, order="asc" if current else "desc", page=None)

    def mark(self, key: str) -> str:
        if self.paging.get("sort") != key:
            return ""
        return " ▼" if self.paging.get("order") == "desc" else " ▲"

    def page(self, step: int) -> str | None:
        target = int(self.paging.get("page", 1)) + step
        if target < 1 or target > int(self.paging.get("pages", 1)):
            return None
        return self.to(page=target)


def _routes(path: str, template: str, tab: str, listing: Callable[..., Awaitable[Shown]]) -> None:
    """``/api{path}`` (the JSON) and ``{path}`` (the page) of one listing."""

    async def api(shown: Shown) -> dict[str, Any]:
        return shown.data

    async def page(request: Request, shown: Shown) -> HTMLResponse:
        return render_page(
            request,
            template,
            active="videos",
            tab=tab,
            data=shown.data,
            links=Links(request.url.path, shown.params, shown.data),
            params=shown.params,
            outcomes=OUTCOMES,
        )

    # Set here, not in the signatures: postponed annotations cannot name this closure's listing.
    for route in (api, page):
        route.__annotations__["shown"] = Annotated[Shown, Depends(listing)]
    system_router.add_api_route(f"/api{path}", api, methods=["GET"], description=listing.__doc__)
    system_router.add_api_route(path, page, methods=["GET"], response_class=HTMLResponse)


_routes("/videos", "system_videos.html", "videos", videos_shown)
_routes("/videos/plans", "system_plans.html", "plans", plans_shown)
_routes("/accounts", "system_accounts.html", "accounts", accounts_shown)
_routes("/revisits", "system_revisits.html", "revisits", revisits_shown)
_routes("/node-rounds", "system_rounds.html", "rounds", rounds_shown)
