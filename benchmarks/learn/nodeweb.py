"""A local web that treats crawl nodes differently, for the real run of the assignment policies.

``--hosts`` sites on consecutive loopback addresses from ``--base`` (one port for all), each
with ``--pages`` pages ``/p/<n>.html``; page n links to pages n+1..n+3 of its host and to one
page of two other hosts, so every page is reachable from its host's ``/p/0.html``. A page's
base latency is 50-150 ms (fixed per URL, from a hash). robots.txt is a fast 404 for everyone.

Nodes are told apart by where their requests come in: node k sends its requests through the
"gateway" ``127.0.0.1:<port + 1 + k>`` (``TOPICRAWL_FETCH__PROXIES``), a plain HTTP proxy
request that names its target, which this server answers itself. Hosts belong to providers
(host i to provider i mod 4), and each provider treats one node badly:

- provider 0 refuses node 0 (403: a blocked node);
- provider 1 throttles node 1 (429 with ``Retry-After: 2``);
- provider 2 is slow for node 2 (its pages take 8 times as long);
- provider 3 treats every node alike;

and node 3 is a slow node: every answer it gets takes twice as long.

``GET /__stats`` (on ``127.0.0.1:<port>``) returns JSON: per node, the page answers by
status and the seconds of each good (200) page answer; the pages answered 200 to anyone;
first and last answer time. ``POST /__reset`` clears them.

    python benchmarks/learn/nodeweb.py --hosts 32 --pages 40 --port 8460 --nodes 4
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import time
import zlib
from dataclasses import dataclass, field

from aiohttp import web

PROVIDERS = 4
SLOW_FOR_PROVIDER = 8.0  # provider 2's pages for node 2
SLOW_NODE = 2.0  # every answer to node 3
RETRY_AFTER = "2"


@dataclass
class NodeCounts:
    statuses: dict[int, int] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)


class NodeWeb:
    def __init__(self, *, hosts: list[str], pages: int, port: int, nodes: int) -> None:
        self.hosts = hosts
        self.index = {host: i for i, host in enumerate(hosts)}
        self.pages = pages
        self.port = port
        self.gateways = {port + 1 + k: f"n{k}" for k in range(nodes)}
        self.reset()

    def reset(self) -> None:
        self.counts: dict[str, NodeCounts] = {}
        self.good: set[str] = set()
        self.first = 0.0
        self.last = 0.0

    def latency(self, host: str, page: int) -> float:
        h = zlib.crc32(f"{host}/{page}".encode()) / 0xFFFFFFFF
        return 0.05 + 0.1 * h

    def treatment(self, host: str, node: str) -> tuple[int, float]:
        """The status and the latency factor of ``host``'s pages for ``node``."""
        provider = self.index[host] % PROVIDERS
        factor = SLOW_NODE if node == "n3" else 1.0
        if provider == 0 and node == "n0":
            return 403, factor
        if provider == 1 and node == "n1":
            return 429, factor
        if provider == 2 and node == "n2":
            return 200, factor * SLOW_FOR_PROVIDER
        return 200, factor

    def body(self, index: int, page: int) -> bytes:
        ahead = range(page + 1, min(page + 4, self.pages))
        links = [f'<a href="/p/{k}.html">next {k}</a>' for k in ahead]
        for step in (5, 11):
            other = self.hosts[(index + step) % len(self.hosts)]
            target = (page * 3 + step) % self.pages
            links.append(f'<a href="http://{other}:{self.port}/p/{target}.html">x{step}</a>')
        return (
            f"<!DOCTYPE html><html><head><title>{index}/{page}</title></head><body>"
            f"<h1>Page {page} of host {index}</h1><p>{' '.join(links)}</p></body></html>"
        ).encode()

    def _node(self, request: web.Request) -> str:
        sockname = request.transport.get_extra_info("sockname") if request.transport else None
        if sockname is None:
            return "direct"
        return self.gateways.get(int(sockname[1]), "direct")

    async def page(self, request: web.Request) -> web.Response:
        host = request.url.host or ""
        if host not in self.index:
            raise web.HTTPNotFound()
        page = int(request.match_info["n"])
        if not 0 <= page < self.pages:
            raise web.HTTPNotFound()
        node = self._node(request)
        status, factor = self.treatment(host, node)
        counts = self.counts.setdefault(node, NodeCounts())
        counts.statuses[status] = counts.statuses.get(status, 0) + 1
        if status == 403:
            return web.Response(status=403, text="forbidden")
        if status == 429:
            return web.Response(status=429, text="slow down", headers={"Retry-After": RETRY_AFTER})
        started = time.time()
        seconds = self.latency(host, page) * factor
        await asyncio.sleep(seconds)
        counts.seconds.append(time.time() - started)
        self.good.add(f"{host}/{page}")
        self.first = self.first or started
        self.last = time.time()
        return web.Response(body=self.body(self.index[host], page), content_type="text/html")

    async def robots(self, request: web.Request) -> web.Response:
        raise web.HTTPNotFound()

    async def stats(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "nodes": {
                    node: {"statuses": c.statuses, "seconds": c.seconds}
                    for node, c in self.counts.items()
                },
                "good": sorted(self.good),
                "total_pages": len(self.hosts) * self.pages,
                "first": self.first,
                "last": self.last,
            }
        )

    async def clear(self, request: web.Request) -> web.Response:
        self.reset()
        return web.json_response({"ok": True})


async def serve(args: argparse.Namespace) -> None:
    base = ipaddress.IPv4Address(args.base)
    hosts = [str(base + i) for i in range(args.hosts)]
    site = NodeWeb(hosts=hosts, pages=args.pages, port=args.port, nodes=args.nodes)
    app = web.Application()
    app.router.add_get("/p/{n}.html", site.page)
    app.router.add_get("/robots.txt", site.robots)
    app.router.add_get("/__stats", site.stats)
    app.router.add_post("/__reset", site.clear)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    for host in [*hosts, "127.0.0.1"]:
        await web.TCPSite(runner, host, args.port, backlog=512).start()
    for gateway in site.gateways:
        await web.TCPSite(runner, "127.0.0.1", gateway, backlog=512).start()
    print(json.dumps({"hosts": hosts, "port": args.port, "gateways": site.gateways}), flush=True)
    await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=32)
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--base", default="127.0.3.1")
    parser.add_argument("--port", type=int, default=8460)
    parser.add_argument("--nodes", type=int, default=4)
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
