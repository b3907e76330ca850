"""``topicrawl serve``: the dashboard over a crawl database, in a browser."""

from __future__ import annotations

import ipaddress
import secrets
from typing import Annotated

import typer
from rich.console import Console

__all__ = ["serve"]

EXIT_CONFIG = 2
_err = Console(stderr=True)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) only listens on this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(  # noqa: PLR0917 - typer maps each option to a parameter
    db: Annotated[str, typer.Option(help="SQLite file or postgresql:// URL (read only).")],
    redis: Annotated[
        str | None, typer.Option(help="Redis of a distributed crawl (for the Nodes page).")
    ] = None,
    namespace: Annotated[
        str | None, typer.Option(help="The distributed crawl's namespace (default: default).")
    ] = None,
    host: Annotated[
        str, typer.Option(help="Address to listen on; anything but loopback needs --token.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.", min=1, max=65535)] = 8000,
    token: Annotated[
        str | None,
        typer.Option(
            help="Access token every request must carry (Authorization: Bearer, or open "
            "/?token=TOKEN once for a cookie). Env: TOPICRAWL_DASHBOARD_TOKEN.",
            envvar="TOPICRAWL_DASHBOARD_TOKEN",
        ),
    ] = None,
) -> None:
    """Serve the dashboard of a crawl database: live stats, topics, pages, graph, nodes."""
    if not is_loopback(host) and not token:
        _err.print(
            f"[red]error:[/red] listening on {host} needs --token (anyone who can reach it "
            f"could read the crawl); e.g. --token {secrets.token_urlsafe(24)}",
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_CONFIG)
    if token is not None and len(token) < 16:
        _err.print("[red]error:[/red] --token must be at least 16 characters")
        raise typer.Exit(EXIT_CONFIG)
    if namespace is not None and redis is None:
        _err.print("[red]error:[/red] --namespace needs --redis")
        raise typer.Exit(EXIT_CONFIG)
    import asyncio  # noqa: PLC0415

    import uvicorn  # noqa: PLC0415 - the web extra is only needed here

    from topicrawl.core.errors import ConfigError, StorageError  # noqa: PLC0415
    from topicrawl.web.app import DashboardConfig, create_app, open_reader  # noqa: PLC0415

    async def check() -> None:
        engine, _, _ = await open_reader(db)
        await engine.dispose()

    try:
        asyncio.run(check())
    except ConfigError as exc:
        _err.print(f"[red]error:[/red] {exc}", soft_wrap=True)
        raise typer.Exit(EXIT_CONFIG) from exc
    except StorageError as exc:
        _err.print(f"[red]database error:[/red] {exc}", soft_wrap=True)
        raise typer.Exit(4) from exc
    config = DashboardConfig(
        db_url=db, port=port, token=token, redis_url=redis, namespace=namespace or "default"
    )
    shown = f"[{host}]" if ":" in host else host
    where = f"http://{shown}:{port}/" + ("?token=…" if token else "")
    _err.print(f"dashboard of {db} at {where} (Ctrl-C to stop)", soft_wrap=True)
    uvicorn.run(create_app(config), host=host, port=port, log_level="warning", access_log=False)
