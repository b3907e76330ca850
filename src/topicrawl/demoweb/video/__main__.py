"""``python -m topicrawl.demoweb.video``: serve the demo video site on loopback until Ctrl-C."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Sequence

from topicrawl.core.errors import ConfigError
from topicrawl.demoweb.video.server import VersionSchedule, VideoServer
from topicrawl.demoweb.video.site import build_video_site
from topicrawl.demoweb.video.templates import TEMPLATE_VERSIONS


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m topicrawl.demoweb.video",
        description="Serve the demo video site until Ctrl-C.",
    )
    parser.add_argument("--seed", type=int, default=0, help="catalog seed (default 0)")
    parser.add_argument("--host", default="127.0.0.1", help="loopback address")
    parser.add_argument("--port", type=int, default=8090, help="port (0: any)")
    parser.add_argument("--version", default="v1", choices=TEMPLATE_VERSIONS, help="first")
    parser.add_argument("--then", choices=TEMPLATE_VERSIONS, help="version after the switch")
    parser.add_argument("--after-requests", type=int, help="switch after N page requests")
    parser.add_argument("--after-seconds", type=float, help="switch after T seconds")
    return parser


def _schedule(args: argparse.Namespace) -> VersionSchedule:
    if args.then is None:
        return VersionSchedule.fixed(args.version)
    if args.after_seconds is not None:
        return VersionSchedule.after_seconds(args.after_seconds, args.then, before=args.version)
    return VersionSchedule.after_requests(
        args.after_requests or 100, args.then, before=args.version
    )


async def _serve(server: VideoServer) -> None:
    async with server:
        print(f"demo video site: {server.base_url} (sitemap: {server.base_url}sitemap.xml)")
        print("Serving; press Ctrl-C to stop.", flush=True)
        await asyncio.Event().wait()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server; returns the exit code (0 after Ctrl-C, 2 on bad arguments)."""
    args = _parser().parse_args(argv)
    try:
        server = build_video_site(seed=args.seed).server(
            host=args.host, port=args.port, version_schedule=_schedule(args)
        )
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(server))
    return 0


if __name__ == "__main__":
    sys.exit(main())
