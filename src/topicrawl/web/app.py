"""The dashboard's FastAPI application: HTML pages, the JSON API they read, and /metrics.

The pages are shells (Jinja2, autoescaped) whose scripts, served from ``static/``, fetch the
same JSON a user gets from ``/api/...``; nothing is inline, so the Content-Security-Policy
allows scripts and styles from the app only (:mod:`topicrawl.web.security`).

The crawl database is opened read-only (SQLite ``mode=ro`` with ``query_only``; PostgreSQL
read-only transactions): the dashboard never writes, and on SQLite each read is a short
statement of its own in WAL mode, so a running crawl's writer never waits on it. It never
migrates either: a database of an older schema (from version 2) is shown as it is, and what
needs newer tables or columns says so (:class:`~topicrawl.storage.stored_schema.StoredSchema`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.types import ASGIApp

from topicrawl.storage.migrations import check_readable
from topicrawl.storage.stored_schema import StoredSchema, read_stored_schema
from topicrawl.storage.target import create_engine, parse_target
from topicrawl.web.api import api_router
from topicrawl.web.live import LiveTally
from topicrawl.web.nodes import NodesSource
from topicrawl.web.security import SecurityMiddleware, loopback_hosts
from topicrawl.web.state import DashboardState
from topicrawl.web.system_routes import system_router
from topicrawl.web.views import VENDOR_FILES, VendorFiles, views_router

__all__ = ["DashboardConfig", "create_app", "open_reader"]

STATIC = Path(__file__).parent / "static"


@dataclass(frozen=True, slots=True)
class DashboardConfig:
    """What ``topicrawl serve`` was given.

    ``token`` None means no token: then only loopback Host names are answered (``serve``
    refuses a non-loopback address without a token).
    """

    db_url: str
    port: int = 8000
    token: str | None = None
    redis_url: str | None = None
    namespace: str | None = None
    heartbeat_timeout: float = 15.0


async def open_reader(db_url: str) -> tuple[AsyncEngine, str, StoredSchema]:
    """A read-only engine on a crawl database, checked to be one this topicrawl reads, and
    the schema it has (never migrated here).

    Raises:
        ConfigError: the URL is malformed.
        StorageError: the database does not exist or is not a readable topicrawl database.
    """
    from topicrawl.core.errors import StorageError  # noqa: PLC0415

    target = parse_target(db_url)
    if target.path is not None and not target.path.is_file():
        raise StorageError(f"database {target.path} does not exist (crawl into it first)")
    engine = create_engine(target, busy_timeout=5.0, connect_timeout=10.0, read_only=True)
    try:
        version = await check_readable(engine, display=target.display)
        schema = await read_stored_schema(engine, version)
    except BaseException:
        await engine.dispose()
        raise
    return engine, target.display, schema


def create_app(config: DashboardConfig, *, vendor: VendorFiles = VENDOR_FILES) -> ASGIApp:
    """The dashboard over ``config.db_url`` (opened when the app starts).

    The security layer wraps the whole application, error pages included.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine, display, schema = await open_reader(config.db_url)
        nodes = (
            NodesSource(
                config.redis_url,
                namespace=config.namespace or "default",
                heartbeat_timeout=config.heartbeat_timeout,
            )
            if config.redis_url
            else None
        )
        app.state.dashboard = DashboardState(
            engine=engine,
            tally=LiveTally(),
            nodes=nodes,
            display=display,
            schema=schema,
        )
        try:
            yield
        finally:
            await engine.dispose()

    app = FastAPI(
        title="topicrawl dashboard",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url="/api/openapi.json",
    )
    app.state.vendor = vendor
    app.include_router(api_router)
    app.include_router(views_router)
    app.include_router(system_router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return SecurityMiddleware(
        app,
        token=config.token,
        allowed_hosts=None if config.token else loopback_hosts(config.port),
    )
