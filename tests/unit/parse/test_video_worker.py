"""Video detection in the parse worker: found through the parser's own walk, carried over the
worker pipe, and skipped cheaply on pages without video markers."""

from __future__ import annotations

import pytest

from topicrawl.parse.worker import pack, parse_body, unpack

URL = "http://site.test/p.html"
PLAY = (
    "<html><head><meta property='og:type' content='video.movie'></head><body>"
    "<video controls><source src='/v/720.mp4' size='720'></video></body></html>"
)


@pytest.mark.parametrize(
    "html",
    [
        PLAY,
        "<html><head><meta property='og:video' content='/v.mp4'></head></html>",
        "<html><body><VIDEO CONTROLS SRC='/v.MP4'></VIDEO></body></html>",
        "<script>jwplayer('p').setup({file: '/hls/1/master.m3u8'});</script>",
        '<script type="application/ld+json">{"@type": "Movie", "name": "x"}</script>',
        "<meta name='twitter:card' content='player'>",
    ],
)
def test_video_pages_are_found_in_the_worker(html: str) -> None:
    doc = parse_body(html.encode(), URL)
    assert doc.video is not None
    assert doc.video.video_class in ("play", "video")


@pytest.mark.parametrize(
    "html",
    [
        "<html><body><p>A video about cats. Watch the movie episode.</p></body></html>",
        "<pre><code>&lt;video src=&quot;/x.mp4&quot;&gt;</code></pre>",
        "<audio controls src='/a.mp3'></audio>",
        '<script type="application/ld+json">{"@type": "Organization"}</script>',
    ],
)
def test_pages_without_video_get_none(html: str) -> None:
    assert parse_body(html.encode(), URL).video is None


def test_video_off_skips_detection() -> None:
    assert parse_body(PLAY.encode(), URL, video=False).video is None


def test_the_verdict_survives_the_pipe() -> None:
    doc = parse_body(PLAY.encode(), URL)
    again = unpack(pack(doc))
    assert again.video is not None
    assert doc.video is not None
    assert again.video.video_class == doc.video.video_class == "play"
    assert again.video.media == doc.video.media
    assert again.video.media[0].height == 720
    assert again.page == doc.page
