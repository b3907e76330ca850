"""``python -m topicrawl.demoweb``: serve a demo web on loopback until Ctrl-C."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from collections.abc import Sequence

from topicrawl.core.errors import ConfigError
from topicrawl.demoweb.changing import ChangeLog
from topicrawl.demoweb.graph import DemoWeb
from topicrawl.demoweb.metasearch import SearchServer
from topicrawl.demoweb.model import Kind
from topicrawl.demoweb.server import DemoWebServer


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m topicrawl.demoweb",
        description="Serve the topicrawl demo web (several loopback hosts) until Ctrl-C.",
    )
    parser.add_argument("--seed", type=int, default=7, help="generation seed (default 7)")
    parser.add_argument("--port", type=int, default=8080, help="port for every host (0: any)")
    parser.add_argument("--hosts", type=int, default=6, help="number of hosts (default 6)")
    parser.add_argument("--pages-per-host", type=int, default=60, help="articles per host")
    parser.add_argument("--base-address", default="127.0.0.2", help="first host's address")
    parser.add_argument("--crawl-delay", type=float, default=0.05, help="second host's delay")
    parser.add_argument("--slow-delay", type=float, default=2.0, help="seconds /lab/slow waits")
    parser.add_argument("--flaky-failures", type=int, default=2, help="503s before /lab/flaky")
    parser.add_argument(
        "--changing-day",
        type=float,
        default=0.0,
        help="articles change (Poisson, median 0.5 changes a day for 30 days), a day lasting"
        " this many seconds; 0 (default): pages never change",
    )
    parser.add_argument(
        "--spa-hosts",
        type=int,
        default=0,
        help="serve the last N hosts as single-page apps (pages built by their script)",
    )
    parser.add_argument(
        "--search-port",
        type=int,
        default=-1,
        help="also serve a SearXNG-compatible /search on 127.0.0.1:PORT (0: any; -1: none)",
    )
    return parser


async def _serve(server: DemoWebServer, search_port: int) -> None:
    async with server:
        for address, base in server.bases.items():
            app = " (single-page app)" if address in server.spa_hosts else ""
            print(f"{server.web.host(address).name}: {base}{app}")
        if search_port >= 0:
            async with SearchServer(server.web, port=search_port) as search:
                print(f"meta-search (SearXNG JSON API): {search.base_url}")
                print("Serving the demo web; press Ctrl-C to stop.", flush=True)
                await asyncio.Event().wait()
        print("Serving the demo web; press Ctrl-C to stop.", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        # Explicit handlers: a shell starts background jobs with SIGINT ignored, and Python
        # keeps an inherited "ignore", so Ctrl-C/kill -INT would otherwise do nothing there.
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()


def _spa_hosts(web: DemoWeb, count: int) -> list[str]:
    if not 0 <= count <= len(web.hosts):
        raise ValueError(f"--spa-hosts must be 0..{len(web.hosts)}")
    return [h.address for h in web.hosts[len(web.hosts) - count :]]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server; returns the process exit code (0 after Ctrl-C, 2 on bad arguments)."""
    args = _parser().parse_args(argv)
    try:
        web = DemoWeb.generate(
            seed=args.seed,
            hosts=args.hosts,
            pages_per_host=args.pages_per_host,
            base_address=args.base_address,
            crawl_delay=args.crawl_delay,
            flaky_failures=args.flaky_failures,
        )
        changes = None
        if args.changing_day > 0:
            bound = web.at_port(1)
            articles = [
                (page.host, page.path)
                for page in map(bound.find, bound.urls(documents_only=True))
                if page is not None and page.kind is Kind.ARTICLE
            ]
            changes = ChangeLog(
                articles, seed=args.seed, start=time.time(), day_seconds=args.changing_day
            )
        spa = _spa_hosts(web, args.spa_hosts)
        server = DemoWebServer(
            web,
            port=args.port,
            slow_delay=args.slow_delay,
            changes=changes,
            spa_hosts=spa,
        )
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(_serve(server, args.search_port))
    except KeyboardInterrupt:
        return 0
    except OSError as exc:
        print(f"error: cannot listen on port {args.port}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
