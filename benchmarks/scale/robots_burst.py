"""A crawl's first second on the scale web: every host's robots.txt asked for at once.

    PYTHONPATH=src python benchmarks/scale/robots_burst.py --port 19218 --timeout 2

Asks :class:`topicrawl.fetch.RobotsCache` (session mode, as a crawl builds it) whether the home
page of each of the scale web's ``--hosts`` hosts may be fetched, all at once, and prints one
JSON line: how many hosts were allowed, how many were held because their robots.txt got no
answer (timeout, network error), how long they are held (the ``retry_after`` the crawl would
wait), and the seconds the burst took. Run it with one checkout's ``src`` on the
``PYTHONPATH``, then another's, against the same running web (the server is
:mod:`topicrawl.demoweb.scaleserver`), to compare them under the same load. ``--timeout``
(seconds for one robots.txt request) can be made small to stand for a loaded machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time

import aiohttp

from topicrawl.demoweb.scaleweb import ScaleWeb
from topicrawl.fetch import RobotsCache


async def burst(args: argparse.Namespace) -> dict[str, object]:
    web = ScaleWeb(seed=args.seed, hosts=args.hosts, base_address=args.base, port=args.port)
    connector = aiohttp.TCPConnector(limit=args.connections, limit_per_host=8)
    async with aiohttp.ClientSession(connector=connector) as session:
        robots = RobotsCache(
            session=session,
            user_agent="topicrawl/0.1",
            error_ttl=600.0,
            max_crawl_delay=30.0,
            timeout=args.timeout,
        )
        start = time.perf_counter()
        decisions = await asyncio.gather(*(robots.decide(url) for url in web.seeds()))
        seconds = time.perf_counter() - start
    held = [d.retry_after for d in decisions if d.retry_after is not None]
    return {
        "hosts": len(decisions),
        "allowed": sum(d.allowed for d in decisions),
        "held_no_answer": len(held),
        "held_median_s": round(statistics.median(held), 1) if held else None,
        "held_max_s": round(max(held), 1) if held else None,
        "seconds": round(seconds, 2),
        "timeout": args.timeout,
        "load": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8480)
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--base", default="127.1.0.1")
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=128)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(burst(args))), flush=True)


if __name__ == "__main__":
    main()
