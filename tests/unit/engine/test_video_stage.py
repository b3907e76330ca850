"""The crawl's video stage without I/O: which resolver, what is fetched, failures kept apart."""

from __future__ import annotations

from topicrawl.core.config import VideoSettings
from topicrawl.core.errors import BodyTooLarge
from topicrawl.engine.video import VideoStage
from topicrawl.parse.video import Resolution, ResolverRegistry, detect_video

URL = "http://site.test/watch.html"
MASTER = b"#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=640x360\n360/i.m3u8\n"
HLS_PAGE = "<video controls src='/hls/master.m3u8'></video>"
MP4_PAGE = "<video controls><source src='/a.mp4'><source src='/big.mp4'></video>"


class _Fetches:
    def __init__(self, bodies: dict[str, bytes]) -> None:
        self.bodies = bodies
        self.asked: list[tuple[str, str, int]] = []

    async def __call__(self, url: str, parent: str, max_bytes: int) -> bytes:
        self.asked.append((url, parent, max_bytes))
        body = self.bodies[url]
        if len(body) > max_bytes:
            raise BodyTooLarge(url, "too big")
        return body


async def test_generic_resolver_fetches_the_manifest_with_the_cap() -> None:
    fetch = _Fetches({"http://site.test/hls/master.m3u8": MASTER})
    stage = VideoStage(settings=VideoSettings(plugins=False), fetch=fetch)
    video = await stage.resolve(URL, HLS_PAGE, detect_video(HLS_PAGE, URL))
    assert video.video_class == "play"
    assert {m.url for m in video.media} == {
        "http://site.test/hls/master.m3u8",
        "http://site.test/hls/360/i.m3u8",
    }
    assert fetch.asked == [("http://site.test/hls/master.m3u8", URL, 2_000_000)]


async def test_no_manifest_fetch_when_off_or_not_needed() -> None:
    fetch = _Fetches({})
    off = VideoStage(settings=VideoSettings(plugins=False, fetch_manifests=False), fetch=fetch)
    video = await off.resolve(URL, HLS_PAGE, detect_video(HLS_PAGE, URL))
    assert [m.url for m in video.media] == ["http://site.test/hls/master.m3u8"]
    stage = VideoStage(settings=VideoSettings(plugins=False), fetch=fetch)
    await stage.resolve(URL, MP4_PAGE, detect_video(MP4_PAGE, URL))
    assert fetch.asked == []


async def test_fetch_media_fetches_files_and_keeps_failures() -> None:
    fetch = _Fetches(
        {"http://site.test/a.mp4": b"x" * 100, "http://site.test/big.mp4": b"x" * 5000}
    )
    settings = VideoSettings(plugins=False, fetch_media=True, max_media_bytes=1024)
    stage = VideoStage(settings=settings, fetch=fetch)
    video = await stage.resolve(URL, MP4_PAGE, detect_video(MP4_PAGE, URL))
    assert [a[0] for a in fetch.asked] == ["http://site.test/a.mp4", "http://site.test/big.mp4"]
    assert stage.counts["media/fetched"] == 1
    assert stage.counts["media/bytes"] == 100
    assert len(video.errors) == 1
    assert "big.mp4" in video.errors[0]
    assert "too_large" in video.errors[0]


class _Broken:
    name = "broken"

    async def resolve(self, url: str, html: str, *, fetch: object = None) -> Resolution:
        raise RuntimeError("plugin bug")


async def test_a_failing_plugin_leaves_the_markup_verdict() -> None:
    registry = ResolverRegistry({"site.test": _Broken()})
    stage = VideoStage(settings=VideoSettings(), fetch=_Fetches({}), registry=registry)
    video = await stage.resolve(URL, MP4_PAGE, detect_video(MP4_PAGE, URL))
    assert video.resolver == "markup"
    assert video.video_class == "play"
    assert stage.counts["errors/resolver/broken"] == 1
