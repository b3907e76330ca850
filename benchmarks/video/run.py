"""Video benchmark: play-page F1 and media-URL precision/recall on the labelled demo video site,
topicrawl's generic resolver beside yt-dlp's generic extractor on the same served pages.

    PYTHONPATH=src .venv/bin/python benchmarks/video/run.py [--seed 0] [--no-ytdlp] [--json F]

Every labelled page of ``build_video_site(seed)`` (hard cases included) is served on loopback
and fetched over HTTP. topicrawl: the page's HTML through ``GenericResolver`` with a fetch for
the HLS/DASH manifests it links (over HTTP, capped at 2 MB), under each template version.
yt-dlp: ``extract_info(url, download=False)`` with its default extractors (on a loopback URL
only its generic extractor and the generic embed extractors apply), under ``v1`` only (the
media markup is the same in every version). Classes: play / video (detail pages) / none.
Media: a listed URL is right when it is in the page's truth (exact URL); precision and recall
are over all pages (a URL listed on a non-play page is a false positive). What detection
costs the parse worker is measured by ``cost.py``.

Session 20: the site is served twice, on 127.0.0.1 and on 127.0.0.2 (the second holds the
cross-origin iframe's player page); the per-version rows leave out the held-out pages
(``/heldout/``, reported apart as ``*/heldout``). ``*/iframe``: every page with a player iframe
or a JSON-LD ``embedUrl`` only (``PageTruth.embeds``): its class, whether the detector names
the player page, and the media found by following it (resolving the player page, fetched over
HTTP from whichever host serves it) against the player page's truth. yt-dlp is given the
iframe page itself (its generic extractor may follow iframes on its own).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from topicrawl.demoweb.video import TEMPLATE_VERSIONS, VideoSite, build_video_site
from topicrawl.parse.video import GenericResolver, Resolution, detect_video

_MAX_MANIFEST = 2_000_000


@dataclass
class Score:
    """Counts for one resolver over one set of pages."""

    classes: Counter[tuple[str, str]] = field(default_factory=Counter)
    tp: int = 0
    fp: int = 0
    fn: int = 0
    attrs_right: int = 0
    attrs_stated: int = 0
    seconds: list[float] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)

    def add(self, site: VideoSite, path: str, result: Resolution, seconds: float) -> None:
        truth = site.truth(path)
        self.classes[truth.video_class, result.video_class] += 1
        expected = {m.url: m for m in truth.media}
        got = {m.url: m for m in result.media}
        self.tp += len(expected.keys() & got.keys())
        self.fp += len(got.keys() - expected.keys())
        self.fn += len(expected.keys() - got.keys())
        for url in expected.keys() & got.keys():
            want, have = expected[url], got[url]
            for a, b in ((want.height, have.height), (want.bitrate, have.bitrate)):
                if a is not None:
                    self.attrs_stated += 1
                    self.attrs_right += a == b
        self.seconds.append(seconds)
        if truth.video_class != result.video_class or expected.keys() != got.keys():
            self.wrong.append(f"{path} ({truth.subkind or truth.kind}): {result.video_class}")

    def f1(self, positive: set[str]) -> float:
        tp = sum(n for (t, p), n in self.classes.items() if t in positive and p in positive)
        fp = sum(n for (t, p), n in self.classes.items() if t not in positive and p in positive)
        fn = sum(n for (t, p), n in self.classes.items() if t in positive and p not in positive)
        return 2 * tp / (2 * tp + fp + fn) if tp else 0.0

    def row(self) -> dict[str, Any]:
        pages = sum(self.classes.values())
        right = sum(n for (t, p), n in self.classes.items() if t == p)
        return {
            "pages": pages,
            "class_accuracy": right / pages,
            "play_f1": self.f1({"play"}),
            "video_f1": self.f1({"play", "video"}),
            "media_precision": self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0,
            "media_recall": self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0,
            "media_tp_fp_fn": [self.tp, self.fp, self.fn],
            "height_bitrate_right": f"{self.attrs_right}/{self.attrs_stated}",
            "median_ms": 1000 * statistics.median(self.seconds),
            "wrong": self.wrong[:40],
        }


async def _get(session: aiohttp.ClientSession, url: str, cap: int) -> bytes:
    async with session.get(url) as response:
        if response.status != 200:
            raise OSError(f"HTTP {response.status}")
        body = await response.content.read(cap + 1)
        if len(body) > cap:
            raise OSError(f"body over {cap} bytes")
        return body


def _paths(site: VideoSite, heldout: bool) -> list[str]:
    return [p for p in site.paths() if p.startswith("/heldout/") == heldout]


async def run_topicrawl(
    site: VideoSite, version: str, server_set: Any, *, heldout: bool = False
) -> Score:
    resolver = GenericResolver()
    score = Score()
    async with aiohttp.ClientSession() as session:

        async def fetch(url: str) -> bytes:
            return await _get(session, url, _MAX_MANIFEST)

        for path in _paths(site, heldout):
            server_set(version)
            html = (await _get(session, site.url(path), 10_000_000)).decode("utf-8")
            started = time.perf_counter()
            result = await resolver.resolve(site.url(path), html, fetch=fetch)
            score.add(site, path, result, time.perf_counter() - started)
    return score


@dataclass
class Follow:
    """Pages whose video plays in another page (``PageTruth.embeds``), the player followed."""

    pages: int = 0
    class_right: int = 0
    embed_named: int = 0
    tp: int = 0
    fp: int = 0
    fn: int = 0
    wrong: list[str] = field(default_factory=list)

    def add(self, path: str, video_class: str, named: bool, want: set[str], got: set[str]) -> None:
        self.pages += 1
        self.class_right += video_class == "video"
        self.embed_named += named
        self.tp += len(want & got)
        self.fp += len(got - want)
        self.fn += len(want - got)
        if video_class != "video" or not named or want != got:
            self.wrong.append(f"{path}: {video_class}, player named {named}, media {sorted(got)}")

    def row(self) -> dict[str, Any]:
        return {
            "pages": self.pages,
            "class_right": self.class_right,
            "player_named": self.embed_named,
            "followed_media_tp_fp_fn": [self.tp, self.fp, self.fn],
            "wrong": self.wrong,
        }


def _embed_truth(sites: list[VideoSite], url: str) -> set[str]:
    for site in sites:
        if url.startswith(site.base):
            return {m.url for m in site.truth(url[len(site.base) - 1 :]).media}
    raise KeyError(url)


async def run_follow(site: VideoSite, others: list[VideoSite]) -> Follow:
    """topicrawl on the pages with embeds: detect, then resolve each named player page."""
    resolver = GenericResolver()
    follow = Follow()
    sites = [site, *others]
    async with aiohttp.ClientSession() as session:

        async def fetch(url: str) -> bytes:
            return await _get(session, url, _MAX_MANIFEST)

        for path in site.paths():
            truth = site.truth(path)
            if not truth.embeds:
                continue
            html = (await _get(session, site.url(path), 10_000_000)).decode("utf-8")
            found = detect_video(html, site.url(path))
            want: set[str] = set()
            got: set[str] = set()
            named = all(e in found.embeds for e in truth.embeds)
            for embed in truth.embeds:
                want |= _embed_truth(sites, embed)
            for embed in found.embeds:
                player = (await _get(session, embed, 10_000_000)).decode("utf-8")
                result = await resolver.resolve(embed, player, fetch=fetch)
                got |= {m.url for m in result.media}
            follow.add(path, found.video_class, named, want, got)
    return follow


async def run_ytdlp_follow(site: VideoSite, others: list[VideoSite]) -> Follow:
    """yt-dlp given each page with embeds: does it reach the player page's media?"""
    from topicrawl.parse.video.ytdlp import YtDlpResolver  # noqa: PLC0415 (optional)

    resolver = YtDlpResolver(timeout=20)
    follow = Follow()
    for path in site.paths():
        truth = site.truth(path)
        if not truth.embeds:
            continue
        result = await resolver.resolve(site.url(path))
        want = set().union(*(_embed_truth([site, *others], e) for e in truth.embeds))
        got = {m.url for m in result.media}
        # yt-dlp has no "video page without media" answer: a page it finds media for via
        # the iframe counts as classed right and its player as named
        ok = bool(got)
        follow.add(path, "video" if ok else result.video_class, ok, want, got)
    return follow


async def run_ytdlp(site: VideoSite, *, heldout: bool = False) -> Score:
    from topicrawl.parse.video.ytdlp import YtDlpResolver  # noqa: PLC0415 (optional)

    resolver = YtDlpResolver(timeout=20)
    score = Score()
    for path in _paths(site, heldout):
        started = time.perf_counter()
        result = await resolver.resolve(site.url(path))
        score.add(site, path, result, time.perf_counter() - started)
    return score


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-ytdlp", action="store_true")
    parser.add_argument(
        "--ytdlp-new-only",
        action="store_true",
        help="run yt-dlp on the held-out and iframe pages only (session 20's additions)",
    )
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    results: dict[str, Any] = {"seed": args.seed}
    # the second host, for the cross-origin player iframe's page
    other = build_video_site(seed=args.seed, heldout=True).server(host="127.0.0.2")
    async with other:
        site = build_video_site(seed=args.seed, heldout=True, cross_base=other.base_url)
        classes = Counter(site.truth(p).video_class for p in _paths(site, False))
        results["pages"] = dict(classes)
        results["heldout_pages"] = dict(
            Counter(site.truth(p).video_class for p in _paths(site, True))
        )
        server = site.server()
        async with server:
            served = server.site
            scores = {}
            for version in TEMPLATE_VERSIONS:
                scores[version] = await run_topicrawl(served, version, server.set_version)
                results[f"topicrawl/{version}"] = scores[version].row()
            results["topicrawl/v1/hard"] = _subset(served, scores["v1"], "/hard/")
            server.set_version("v1")
            results["topicrawl/v1/heldout"] = (
                await run_topicrawl(served, "v1", server.set_version, heldout=True)
            ).row()
            results["topicrawl/v1/iframe"] = (await run_follow(served, [other.site])).row()
            if not args.no_ytdlp:
                server.set_version("v1")
                if not args.ytdlp_new_only:
                    ytdlp = await asyncio.to_thread(_ytdlp_sync, served)
                    results["ytdlp/v1"] = ytdlp.row()
                    results["ytdlp/v1/hard"] = _subset(served, ytdlp, "/hard/")
                results["ytdlp/v1/heldout"] = (
                    await asyncio.to_thread(_ytdlp_sync, served, True)
                ).row()
                results["ytdlp/v1/iframe"] = (
                    await asyncio.to_thread(_ytdlp_follow_sync, served, other.site)
                ).row()
    text = json.dumps(results, indent=2, ensure_ascii=False)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            out.write(text)
    return 0


def _ytdlp_sync(site: VideoSite, heldout: bool = False) -> Score:
    return asyncio.run(run_ytdlp(site, heldout=heldout))


def _ytdlp_follow_sync(site: VideoSite, other: VideoSite) -> Follow:
    return asyncio.run(run_ytdlp_follow(site, [other]))


def _subset(site: VideoSite, score: Score, prefix: str) -> dict[str, Any]:
    wrong = [w for w in score.wrong if w.startswith(prefix)]
    pages = [p for p in site.paths() if p.startswith(prefix)]
    return {"pages": len(pages), "wrong": len(wrong), "examples": wrong[:10]}


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
