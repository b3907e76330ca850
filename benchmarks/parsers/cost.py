"""Parse CPU per page with the parser library on, on pages no schema applies to (the Java 17
API docs), against the code before it: the cost the library adds to a default crawl.

Each variant runs in its own process with its own source tree first on ``sys.path``:

- ``before``: ``--before-src`` (default /work/main/src, the code without the library);
- ``off``: this tree, no ``--parsers`` (the default crawl);
- ``on``: this tree with a library whose schemas (``video.toml``) are for another domain,
  so every Java page is looked up and matches none.

A variant parses the same pages through :class:`topicrawl.engine.parsing.PageParser` with one
worker process (as a crawl does: hint look-up and request on the event loop, decoding,
parsing and hashing in the worker) and reports the CPU time of the event loop's process
(``resource.getrusage``) and of its worker (psutil), per page, after 50 warm-up pages (so the
worker's start-up and imports are not counted). Variants are interleaved and repeated;
medians reported.

    PYTHONPATH=src python benchmarks/parsers/cost.py [--pages 2000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
TREE = HERE.parent.parent / "src"
JAVA = (Path("/usr/share/doc/openjdk-17-jre-headless/api"), "http://127.0.0.11:8080/")


def _pages(count: int) -> list[Path]:
    root = JAVA[0]
    files = sorted(root.rglob("*.html"))
    random.Random(0).shuffle(files)
    return files[:count] if count else files


async def _measure(pages: list[Path], with_library: bool) -> dict[str, float]:
    from topicrawl.core.models import Response  # noqa: PLC0415 - the variant's own tree
    from topicrawl.engine.parsing import PageParser  # noqa: PLC0415

    kwargs: dict[str, object] = {}
    if with_library:
        from topicrawl.parse.methods import ParserLibrary, load_config  # noqa: PLC0415

        kwargs["library"] = ParserLibrary(load_config(HERE / "video.toml"))
    bodies = [(JAVA[1] + str(p.relative_to(JAVA[0])), p.read_bytes()) for p in pages]
    parser = PageParser(workers=1, **kwargs)  # type: ignore[arg-type]
    await parser.start()
    for url, body in bodies[:50]:
        await parser(_response(Response, url, body))
    bodies = bodies[50:]
    worker = psutil.Process(parser._workers[0].process.pid)
    before_worker = worker.cpu_times()
    before_self = resource.getrusage(resource.RUSAGE_SELF)
    for url, body in bodies:
        await parser(_response(Response, url, body))
    after_self = resource.getrusage(resource.RUSAGE_SELF)
    after_worker = worker.cpu_times()
    with contextlib.suppress(Exception):
        await parser.close()
    loop = (after_self.ru_utime + after_self.ru_stime) - (
        before_self.ru_utime + before_self.ru_stime
    )
    busy = (after_worker.user + after_worker.system) - (before_worker.user + before_worker.system)
    return {"loop_ms": 1000 * loop / len(bodies), "worker_ms": 1000 * busy / len(bodies)}


def _response(kind: type, url: str, body: bytes) -> object:
    return kind(
        url=url,
        final_url=url,
        status=200,
        headers={},
        body=body,
        content_type="text/html",
        encoding=None,
        text=None,
        fetched_at=0.0,
        elapsed=0.0,
        charset="utf-8",
    )


def _child(args: argparse.Namespace) -> int:
    pages = _pages(args.pages)
    result = asyncio.run(_measure(pages, args.variant == "on"))
    print(json.dumps(result))
    return 0


def _run_variant(variant: str, src: Path, pages: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(src))
    out = subprocess.run(
        [sys.executable, __file__, "--child", "--variant", variant, "--pages", str(pages)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before-src", type=Path, default=Path("/work/main/src"))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--variant", default="off", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return _child(args)
    sources = {"before": args.before_src, "off": TREE, "on": TREE}
    totals: dict[str, list[float]] = {name: [] for name in sources}
    for round_ in range(args.rounds):
        for name, src in sources.items():
            result = _run_variant(name, src, args.pages)
            total = result["loop_ms"] + result["worker_ms"]
            totals[name].append(total)
            print(
                f"round {round_ + 1} {name:6} loop {result['loop_ms']:.3f} ms/page,"
                f" worker {result['worker_ms']:.3f} ms/page, total {total:.3f}",
                file=sys.stderr,
            )
    base = statistics.median(totals["before"])
    print(f"{args.pages} Java 17 API pages, {args.rounds} rounds, medians of CPU ms per page:")
    for name, values in totals.items():
        median = statistics.median(values)
        print(f"  {name:6} {median:.3f} ms/page ({median / base - 1:+.1%} vs before)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
