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
from topicrawl.parse.video import GenericResolver, Resolution

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


async def run_topicrawl(site: VideoSite, version: str, server_set: Any) -> Score:
    resolver = GenericResolver()
    score = Score()
    async with aiohttp.ClientSession() as session:

        async def fetch(url: str) -> bytes:
            return await _get(session, url, _MAX_MANIFEST)

        for path in site.paths():
            server_set(version)
            html = (await _get(session, site.url(path), 10_000_000)).decode("utf-8")
            started = time.perf_counter()
            result = await resolver.resolve(site.url(path), html, fetch=fetch)
            score.add(site, path, result, time.perf_counter() - started)
    return score


async def run_ytdlp(site: VideoSite) -> Score:
    from topicrawl.parse.video.ytdlp import YtDlpResolver  # noqa: PLC0415 (optional)

    resolver = YtDlpResolver(timeout=20)
    score = Score()
    for path in site.paths():
        started = time.perf_counter()
        result = await resolver.resolve(site.url(path))
        score.add(site, path, result, time.perf_counter() - started)
    return score


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-ytdlp", action="store_true")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    site = build_video_site(seed=args.seed)
    results: dict[str, Any] = {"seed": args.seed}
    classes = Counter(site.truth(p).video_class for p in site.paths())
    results["pages"] = dict(classes)
    server = site.server()
    async with server:
        served = server.site
        scores = {}
        for version in TEMPLATE_VERSIONS:
            scores[version] = await run_topicrawl(served, version, server.set_version)
            results[f"topicrawl/{version}"] = scores[version].row()
        results["topicrawl/v1/hard"] = _subset(served, scores["v1"], "/hard/")
        if not args.no_ytdlp:
            server.set_version("v1")
            ytdlp = await asyncio.to_thread(_ytdlp_sync, served)
            results["ytdlp/v1"] = ytdlp.row()
            results["ytdlp/v1/hard"] = _subset(served, ytdlp, "/hard/")
    text = json.dumps(results, indent=2, ensure_ascii=False)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            out.write(text)
    return 0


def _ytdlp_sync(site: VideoSite) -> Score:
    return asyncio.run(run_ytdlp(site))


def _subset(site: VideoSite, score: Score, prefix: str) -> dict[str, Any]:
    wrong = [w for w in score.wrong if w.startswith(prefix)]
    pages = [p for p in site.paths() if p.startswith(prefix)]
    return {"pages": len(pages), "wrong": len(wrong), "examples": wrong[:10]}


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
