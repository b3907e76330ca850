"""The JSON API under ``/api/`` (what every page shows), and ``/metrics``."""

from __future__ import annotations

import dataclasses
import time
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import Response

from topicrawl.core.errors import FrontierError
from topicrawl.engine.diagnosis import diagnose
from topicrawl.engine.samples import read_samples
from topicrawl.storage.search import PageQuery, search_pages, search_unavailable
from topicrawl.web.graph import knowledge_graph
from topicrawl.web.reading import list_runs, page_detail, topic_evolution
from topicrawl.web.state import SAMPLES_SCHEMA, TRACKING_SCHEMA, DashboardState, dashboard
from topicrawl.web.storage_metrics import render_storage_metrics
from topicrawl.web.topics_view import topics_data

__all__ = ["api_router"]

api_router = APIRouter()

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"
_LIVE_WINDOW = 900.0  # seconds of rates the live charts show
_SAMPLES = 450


def _state(request: Request) -> DashboardState:
    return dashboard(request)


@api_router.get("/api/runs")
async def runs(request: Request) -> dict[str, Any]:
    """The newest runs, their settings and final stats."""
    return {"runs": await list_runs(_state(request).engine)}


@api_router.get("/api/live")
async def live(request: Request, run: Annotated[int | None, Query(ge=1)] = None) -> dict[str, Any]:
    """A run's counts and rates so far (the newest run by default), the crawl's latest
    samples (queue, in flight, waits) and the causes of slowness they show."""
    state = _state(request)
    await state.tally.refresh(state.engine)
    found = await list_runs(state.engine, limit=1, run_id=run)
    if run is not None and not found:
        raise HTTPException(status_code=404, detail=f"no run {run}")
    run_id = found[0]["id"] if found else None
    running = bool(found) and found[0]["finished_at"] is None
    tally = state.tally.run(run_id)
    now = time.time()
    # A running crawl: its last minutes up to now; a finished one: the whole of it.
    series = tally.series(window=_LIVE_WINDOW, now=now) if running else tally.series()
    samples_missing = state.schema.lacks(SAMPLES_SCHEMA)
    samples = (
        await read_samples(
            state.engine, run_id, since=now - _LIVE_WINDOW if running else None, limit=_SAMPLES
        )
        if run_id is not None and samples_missing is None
        else []
    )
    return {
        "unavailable": {"samples": samples_missing} if samples_missing else {},
        "run": run_id,
        "running": running,
        "now": now,
        "caught_up": state.tally.caught_up,
        "totals": {
            "pages": tally.pages,
            "bytes": tally.bytes,
            "failures": tally.failures,
            "failures_by_kind": dict(tally.failures_by_kind),
            "last_at": tally.last_at or None,
        },
        "series": dataclasses.asdict(series),
        "samples": [dataclasses.asdict(sample) for sample in samples],
        "findings": [
            dataclasses.asdict(finding)
            for finding in diagnose(
                samples,
                now=now if running else None,
                finished_at=found[0].get("finished_at") if found and not running else None,
            )
        ],
    }


@api_router.get("/api/pages")
async def pages(  # noqa: PLR0917 - one parameter per filter of the search form
    request: Request,
    q: Annotated[str | None, Query(max_length=500)] = None,
    host: Annotated[str | None, Query(max_length=255)] = None,
    status: Annotated[int | None, Query(ge=0, le=999)] = None,
    min_relevance: float | None = None,
    max_relevance: float | None = None,
    since: float | None = None,
    until: float | None = None,
    run: Annotated[int | None, Query(ge=1)] = None,
    topic: Annotated[str | None, Query(max_length=2000)] = None,
    after: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> dict[str, Any]:
    """Pages matching the words and filters, one page of results with the next cursor."""
    query = PageQuery(
        text=q.strip() or None if q else None,
        host=host.strip() or None if host else None,
        status=status,
        min_relevance=min_relevance,
        max_relevance=max_relevance,
        since=since,
        until=until,
        run_id=run,
        topic=topic or None,
    )
    state = _state(request)
    try:
        found, following = await search_pages(
            state.engine, query, after=after or None, limit=limit, schema=state.schema
        )
    except ValueError as exc:
        raise HTTPException(status_code=400, detail=str(exc)) from exc
    answer: dict[str, Any] = {"pages": [dataclasses.asdict(p) for p in found], "next": following}
    if query.text and (why := search_unavailable(state.schema, state.engine.dialect.name)):
        answer["unavailable"] = {"ranked_search": why}
    return answer


@api_router.get("/api/pages/{page_id}")
async def page(request: Request, page_id: int) -> dict[str, Any]:
    """One page: fields, component scores, outlinks, duplicates, failures, and how its run's
    topic vector moved."""
    state = _state(request)
    detail = await page_detail(state.engine, page_id, schema=state.schema)
    if detail is None:
        raise HTTPException(status_code=404, detail=f"no page {page_id}")
    detail["topic_evolution"] = await topic_evolution(
        state.engine, detail["page"]["run_id"], schema=state.schema
    )
    return detail


@api_router.get("/api/topics")
async def topics(request: Request) -> dict[str, Any]:
    """Tracked topics: heat by period, forecasts by method, CPU caps and processes, words."""
    state = _state(request)
    if why := state.schema.lacks(TRACKING_SCHEMA):
        return {"periods": [], "topics": [], "unavailable": {"topics": why}}
    return await topics_data(state.engine)


@api_router.get("/api/graph")
async def graph(request: Request) -> dict[str, Any]:
    """The knowledge graph (or why it is empty)."""
    return await knowledge_graph(_state(request).engine)


@api_router.get("/api/nodes")
async def nodes(request: Request) -> dict[str, Any]:
    """The workers of a distributed crawl (``serve --redis``), or that none is configured."""
    source = _state(request).nodes
    if source is None:
        return {
            "configured": False,
            "message": "not a distributed crawl: start serve with --redis URL --namespace NS",
            "nodes": [],
        }
    try:
        return await source.read()
    except FrontierError as exc:
        return {"configured": True, "error": str(exc), "nodes": []}


@api_router.get("/metrics")
async def metrics(request: Request) -> Response:
    """What the database holds, in Prometheus's text format."""
    state = _state(request)
    body = await render_storage_metrics(
        state.engine, live_samples=state.schema.lacks(SAMPLES_SCHEMA) is None
    )
    return Response(content=body, media_type=PROMETHEUS_TEXT)
