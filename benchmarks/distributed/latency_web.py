"""A latency-bound web of many hosts for the distributed benchmark.

``--hosts`` sites on consecutive loopback addresses from ``--base`` (one port for all), each
with ``--pages`` pages ``/p/<n>.html``. A page links to six pages of its own host and two of
other hosts; every page is reachable from any host's ``/p/0.html``. Each page answer waits
100-300 ms (fixed per URL, from a hash, so every run sees the same latencies); robots.txt is
a fast 404.

``GET /__stats`` (on any host) returns JSON: pages served (200), first and last serve time
(``time.time()``), and, per host, the smallest gap between two of its page requests.
``POST /__reset`` clears them.

    python benchmarks/distributed/latency_web.py --hosts 128 --pages 20 --port 8390
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import time
import zlib

from aiohttp import web

WORDS = [
    "crawler",
    "frontier",
    "politeness",
    "latency",
    "partition",
    "worker",
    "lease",
    "heartbeat",
    "redis",
    "postgres",
    "throughput",
    "rendezvous",
    "hashing",
    "coordinator",
    "topic",
    "relevance",
    "harvest",
]


class LatencyWeb:
    def __init__(self, *, hosts: list[str], pages: int, port: int, low: float, high: float) -> None:
        self.hosts = hosts
        self.pages = pages
        self.port = port
        self.low = low
        self.high = high
        self.reset()

    def reset(self) -> None:
        self.served = 0
        self.first = 0.0
        self.last = 0.0
        self.last_at: dict[str, float] = {}
        self.min_gap: dict[str, float] = {}

    def latency(self, host: str, page: int) -> float:
        h = zlib.crc32(f"{host}/{page}".encode()) / 0xFFFFFFFF
        return self.low + (self.high - self.low) * h

    def body(self, host_index: int, page: int) -> bytes:
        links = [
            f'<a href="/p/{(page * 7 + k) % self.pages}.html">same {k}</a>' for k in range(1, 7)
        ]
        for k in (1, 2):
            other = self.hosts[(host_index + k * 17) % len(self.hosts)]
            links.append(
                f'<a href="http://{other}:{self.port}/p/{(page + k) % self.pages}.html">x{k}</a>'
            )
        text = " ".join(WORDS[(page * 3 + i) % len(WORDS)] for i in range(300))
        return (
            f"<!DOCTYPE html><html><head><title>{host_index}/{page}</title></head><body>"
            f"<h1>Page {page}</h1><p>{text}</p><ul><li>{'</li><li>'.join(links)}</li></ul>"
            "</body></html>"
        ).encode()

    async def page(self, request: web.Request) -> web.Response:
        host = (request.host or "").split(":")[0]
        try:
            index = self.hosts.index(host)
            page = int(request.match_info["n"])
        except ValueError:
            raise web.HTTPNotFound() from None
        if not 0 <= page < self.pages:
            raise web.HTTPNotFound()
        now = time.time()
        previous = self.last_at.get(host)
        if previous is not None:
            gap = now - previous
            self.min_gap[host] = min(gap, self.min_gap.get(host, gap))
        self.last_at[host] = now
        await asyncio.sleep(self.latency(host, page))
        self.served += 1
        self.first = self.first or now
        self.last = time.time()
        return web.Response(body=self.body(index, page), content_type="text/html")

    async def stats(self, request: web.Request) -> web.Response:
        gaps = sorted(self.min_gap.values())
        return web.json_response(
            {
                "served": self.served,
                "first": self.first,
                "last": self.last,
                "min_gap": gaps[0] if gaps else None,
            }
        )

    async def clear(self, request: web.Request) -> web.Response:
        self.reset()
        return web.json_response({"ok": True})


async def serve(args: argparse.Namespace) -> None:
    base = ipaddress.IPv4Address(args.base)
    hosts = [str(base + i) for i in range(args.hosts)]
    site = LatencyWeb(hosts=hosts, pages=args.pages, port=args.port, low=args.low, high=args.high)
    app = web.Application()
    app.router.add_get("/p/{n}.html", site.page)
    app.router.add_get("/__stats", site.stats)
    app.router.add_post("/__reset", site.clear)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    for host in hosts:
        await web.TCPSite(runner, host, args.port, backlog=512).start()
    print(json.dumps({"hosts": hosts, "port": args.port}), flush=True)
    await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=128)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--base", default="127.0.2.1")
    parser.add_argument("--port", type=int, default=8390)
    parser.add_argument("--low", type=float, default=0.1)
    parser.add_argument("--high", type=float, default=0.3)
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
