"""Video and play page detection from hand-made pages: each signal, each hard negative."""

from __future__ import annotations

import json

import pytest

from topicrawl.parse.html import parse_html
from topicrawl.parse.video import detect_video, has_video_markers, media_type
from topicrawl.parse.video.detect import nodes_have_video_markers, parse_bitrate

URL = "http://site.test/watch/1.html"


def _page(head: str = "", body: str = "") -> str:
    return f"<!DOCTYPE html><html><head><title>t</title>{head}</head><body>{body}</body></html>"


def _ld(obj: object) -> str:
    return f'<script type="application/ld+json">{json.dumps(obj)}</script>'


def test_a_page_without_markers_is_not_parsed_and_is_none() -> None:
    html = _page(body="<p>Nothing to watch here.</p><a href='/a.html'>a</a>")
    assert not has_video_markers(html)
    page = detect_video(html, URL)
    assert page.video_class == "none"
    assert page.media == ()


def test_video_sources_with_sizes_and_relative_urls() -> None:
    html = _page(
        body='<video controls><source src="../m/720.mp4" type="video/mp4" size="720">'
        '<source src="//cdn.test/m/480.webm" type="video/webm" label="480p"></video>'
    )
    page = detect_video(html, URL)
    assert page.video_class == "play"
    assert [(m.url, m.type, m.height) for m in page.media] == [
        ("http://site.test/m/720.mp4", "mp4", 720),
        ("http://cdn.test/m/480.webm", "webm", 480),
    ]


def test_base_href_is_used_for_relative_media() -> None:
    html = _page(
        head='<base href="http://media.test/v/">',
        body='<video controls src="clip.mp4"></video>',
    )
    assert detect_video(html, URL).media[0].url == "http://media.test/v/clip.mp4"


@pytest.mark.parametrize(
    "video",
    [
        '<video autoplay muted loop playsinline><source src="/bg.mp4"></video>',
        '<video muted loop preload="none" poster="p.gif"><source src="/prev.mp4"></video>',
    ],
)
def test_muted_video_without_controls_is_decoration(video: str) -> None:
    page = detect_video(_page(body=video), URL)
    assert page.video_class == "none"
    assert "decorative-video" in page.signals


def test_muted_autoplay_with_controls_is_a_player() -> None:
    html = _page(body='<video autoplay muted controls src="/v.mp4"></video>')
    assert detect_video(html, URL).video_class == "play"


def test_audio_is_never_video() -> None:
    html = _page(
        head='<meta property="og:audio" content="/a.mp3">',
        body='<audio controls><source src="/a.mp3" type="audio/mpeg"></audio>'
        '<audio controls src="/hls/a/master.m3u8"></audio>',
    )
    assert detect_video(html, URL).video_class == "none"


def test_opengraph_and_twitter() -> None:
    html = _page(
        head='<meta property="og:type" content="video.movie">'
        '<meta property="og:video" content="http://site.test/v/1.mp4">'
        '<meta property="og:video:height" content="720">'
        '<meta property="og:video:width" content="1280">'
        '<meta name="twitter:player" content="http://site.test/embed/1.html">'
        '<meta name="twitter:player:stream" content="http://site.test/v/1.mp4">'
    )
    page = detect_video(html, URL)
    assert page.video_class == "play"
    assert [(m.url, m.width, m.height, m.source) for m in page.media] == [
        ("http://site.test/v/1.mp4", 1280, 720, "og")
    ]
    assert page.embeds == ("http://site.test/embed/1.html",)


def test_og_video_that_is_a_player_page_is_an_embed_not_media() -> None:
    html = _page(
        head='<meta property="og:video" content="https://player.test/e/9">'
        '<meta property="og:video:type" content="text/html">'
    )
    page = detect_video(html, URL)
    assert page.video_class == "video"
    assert page.media == ()
    assert page.embeds == ("https://player.test/e/9",)


def test_detail_page_is_video_not_play() -> None:
    for head in (
        '<meta property="og:type" content="video.tv_show">',
        _ld({"@context": "https://schema.org", "@type": "TVSeries", "name": "x"}),
        _ld({"@graph": [{"@type": ["Movie"], "name": "x"}]}),
    ):
        page = detect_video(_page(head=head), URL)
        assert page.video_class == "video", head


def test_jsonld_video_object_content_url_embed_url_and_sizes() -> None:
    obj = {
        "@context": "https://schema.org",
        "@type": "VideoObject",
        "contentUrl": "/media/9/1080p.mp4",
        "embedUrl": "/embed/9.html",
        "height": {"@type": "QuantitativeValue", "value": 1080},
        "width": "1920",
        "bitrate": "5000 kbps",
    }
    page = detect_video(_page(head=_ld(obj)), URL)
    assert page.video_class == "play"
    (media,) = page.media
    assert (media.url, media.height, media.width, media.bitrate) == (
        "http://site.test/media/9/1080p.mp4",
        1080,
        1920,
        5_000_000,
    )
    assert page.embeds == ("http://site.test/embed/9.html",)


def test_video_objects_in_an_item_list_are_not_this_pages_video() -> None:
    items = [
        {"@type": "ListItem", "item": {"@type": "VideoObject", "contentUrl": f"/v/{n}.mp4"}}
        for n in range(3)
    ]
    page = detect_video(_page(head=_ld({"@type": "ItemList", "itemListElement": items})), URL)
    assert page.video_class == "none"


def test_broken_or_hostile_json_ld_is_skipped() -> None:
    deep = "[" * 5000 + "]" * 5000
    html = _page(
        head=f'<script type="application/ld+json">{{"@type": "VideoObject",</script>'
        f'<script type="application/ld+json">{deep}</script>'
    )
    assert detect_video(html, URL).video_class == "none"


def test_player_config_json_and_js() -> None:
    config = {
        "sources": [
            {"file": "/hls/9/master.m3u8", "type": "hls"},
            {"file": "/m/9.mp4", "label": "360p"},
        ]
    }
    as_json = f'<script type="application/json" id="cfg">{json.dumps(config)}</script>'
    as_js = f"<script>window.cfg = {json.dumps(config)};\nplayer.setup(cfg);</script>"
    as_call = "<script>jwplayer('p').setup({file: '/hls/9/master.m3u8'});</script>"
    for script in (as_json, as_js):
        page = detect_video(_page(body=script), URL)
        assert page.video_class == "play"
        assert [(m.type, m.height) for m in page.media] == [("hls", None), ("mp4", 360)]
        assert page.manifests == ("http://site.test/hls/9/master.m3u8",)
    assert detect_video(_page(body=as_call), URL).manifests == (
        "http://site.test/hls/9/master.m3u8",
    )


def test_audio_only_player_config_is_not_video() -> None:
    config = {"audioOnly": True, "sources": [{"file": "/hls/pod/master.m3u8"}]}
    html = _page(body=f'<script type="application/json">{json.dumps(config)}</script>')
    assert detect_video(html, URL).video_class == "none"


def test_escaped_markup_in_text_is_not_video() -> None:
    code = "&lt;video controls&gt;&lt;source src=&quot;/x.mp4&quot;&gt;&lt;/video&gt;"
    html = _page(
        body=f"<article><p>How to embed a video</p><pre><code>{code}</code></pre></article>"
    )
    assert detect_video(html, URL).video_class == "none"


@pytest.mark.parametrize(
    ("url", "declared", "kind"),
    [
        ("/a.m3u8?t=1", None, "hls"),
        ("/a", "application/x-mpegURL", "hls"),
        ("/a", "application/vnd.apple.mpegurl", "hls"),
        ("/a.mpd", None, "dash"),
        ("/a", "video/mp4; codecs=avc1", "mp4"),
        ("/a.M4V", None, "mp4"),
        ("/a.mp3", None, None),
        ("/a.mp4", "audio/mp4", None),
        ("/a.mp4", "text/html", None),
        ("javascript:alert(1)", None, None),
    ],
)
def test_media_type(url: str, declared: str | None, kind: str | None) -> None:
    assert media_type(url, declared) == kind


def test_non_http_media_is_ignored() -> None:
    html = _page(
        body='<video controls src="javascript:alert(1).mp4"></video>'
        '<video controls src="data:video/mp4;base64,AAAA"></video>'
    )
    page = detect_video(html, URL)
    assert page.media == ()
    assert page.video_class == "video"


@pytest.mark.parametrize(
    ("value", "bits"),
    [
        ("5000 kbps", 5_000_000),
        ("2.5 Mbps", 2_500_000),
        (800000, 800000),
        ("fast", None),
        (True, None),
    ],
)
def test_bitrate(value: object, bits: int | None) -> None:
    assert parse_bitrate(value) == bits


def test_lazy_data_src_is_the_source() -> None:
    html = _page(body='<video controls><source data-src="/v/720.mp4" type="video/mp4"></video>')
    assert [m.url for m in detect_video(html, URL).media] == ["http://site.test/v/720.mp4"]


def test_audio_through_a_video_element_is_not_video() -> None:
    html = _page(body='<video controls src="/talk.mp3"></video>')
    page = detect_video(html, URL)
    assert page.video_class == "none"
    assert "video:no-video-source" in page.signals


def test_bare_file_names_in_scripts_are_not_sources() -> None:
    script = "<script>var up = {accept: 'video/*', example: 'my-video.mp4'};</script>"
    assert detect_video(_page(body=script), URL).video_class == "none"
    script = "<script>jwplayer('p').setup({file: 'media/clip.mp4'});</script>"
    assert detect_video(_page(body=script), URL).video_class == "play"


def test_hostile_scripts_and_many_videos_stay_linear() -> None:
    # a script of 20,000 assignments and a quoted run: one JSON attempt, no backtracking blow-up
    script = "<script>" + "a = {b: 1}; " * 20_000 + "'" + "x" * 100_000 + "</script>"
    assert detect_video(_page(body=script), URL).video_class == "none"
    videos = "<video controls src='/v.mp4'></video>" * 5_000
    page = detect_video(_page(body=videos), URL)
    assert page.signals == ("video",)
    assert len(page.media) == 1


def test_json_ld_content_url_list() -> None:
    obj = {"@type": "VideoObject", "contentUrl": ["/a.mp4", "/b.webm", 7]}
    page = detect_video(_page(head=_ld(obj)), URL)
    assert [m.url for m in page.media] == ["http://site.test/a.mp4", "http://site.test/b.webm"]


@pytest.mark.parametrize(
    "iframe",
    [
        '<iframe src="https://www.youtube-nocookie.com/embed/abc123"></iframe>',
        '<iframe src="https://player.vimeo.com/video/42?h=1"></iframe>',
        '<iframe src="/embed/f001-1.html" width="640" height="360"></iframe>',
        '<iframe src="/w/9" allowfullscreen></iframe>',
        '<iframe src="/w/9" allow="autoplay; encrypted-media"></iframe>',
    ],
)
def test_a_player_iframe_makes_a_video_page_whose_player_is_followed(iframe: str) -> None:
    page = detect_video(_page(body=f"<h1>Watch</h1>{iframe}"), URL)
    assert page.video_class == "video"  # its media are listed on the player's own page
    assert page.media == ()
    assert len(page.embeds) == 1
    assert page.embeds[0].startswith("http")
    assert "iframe-player" in page.signals


@pytest.mark.parametrize(
    "iframe",
    [
        '<iframe src="https://ads.test/banner.html" width="300"></iframe>',
        '<iframe src="javascript:alert(1)" allowfullscreen></iframe>',
        "<iframe allowfullscreen></iframe>",
        '<iframe src="/comments/thread.html"></iframe>',
    ],
)
def test_other_iframes_are_not_players(iframe: str) -> None:
    page = detect_video(_page(body=f"<p>text</p>{iframe}"), URL)
    assert page.video_class == "none"
    assert page.embeds == ()


def test_the_parse_worker_sees_a_player_iframe_among_the_dropped_elements() -> None:
    seen: list[bool] = []
    html = _page(body='<iframe src="https://player.test/embed/7"></iframe>')
    parse_html(html, url=URL, probe=lambda d, h: seen.append(nodes_have_video_markers(d, h)))
    ad = _page(body='<iframe src="https://ads.test/x.html"></iframe>')
    parse_html(ad, url=URL, probe=lambda d, h: seen.append(nodes_have_video_markers(d, h)))
    assert seen == [True, False]


# Session 20: forms first met in the held-out batch (benchmarks/video/README.md).


def test_player_json_under_other_key_names() -> None:
    blob = {"clip": {"renditions": [{"href": "/m/720.mp4", "mime": "video/mp4"}]}}
    body = f'<script type="application/json" id="state">{json.dumps(blob)}</script>'
    page = detect_video(_page(body=body), URL)
    assert page.video_class == "play"
    assert [(m.url, m.type) for m in page.media] == [("http://site.test/m/720.mp4", "mp4")]


def test_player_json_assigned_with_a_uri_key() -> None:
    body = '<script>window.__STATE__ = {"media": {"streams": [{"uri": "/h/main.m3u8"}]}};</script>'
    page = detect_video(_page(body=body), URL)
    assert [(m.url, m.type) for m in page.media] == [("http://site.test/h/main.m3u8", "hls")]


def test_source_typed_only_in_its_query() -> None:
    body = '<video controls><source src="/stream/42?id=42&amp;format=mp4"></video>'
    page = detect_video(_page(body=body), URL)
    assert page.video_class == "play"
    assert [(m.url, m.type) for m in page.media] == [
        ("http://site.test/stream/42?id=42&format=mp4", "mp4")
    ]


def test_manifest_in_a_player_data_attribute() -> None:
    body = '<video controls data-hls="/h/index.m3u8" poster="/p.jpg"></video>'
    page = detect_video(_page(body=body), URL)
    assert [(m.url, m.type) for m in page.media] == [("http://site.test/h/index.m3u8", "hls")]


def test_videojs_element() -> None:
    body = (
        '<video-js id="v" controls><source src="/h/p.m3u8" type="application/x-mpegURL"></video-js>'
    )
    html = _page(body=body)
    page = detect_video(html, URL)
    assert [(m.url, m.type) for m in page.media] == [("http://site.test/h/p.m3u8", "hls")]
    seen: list[bool] = []
    parse_html(html, url=URL, probe=lambda d, h: seen.append(nodes_have_video_markers(d, h)))
    assert seen == [True]  # the worker's probe sees it too


def test_preloaded_video_link() -> None:
    head = '<link rel="preload" as="video" href="/m/intro.mp4" type="video/mp4">'
    html = _page(head=head, body='<video id="intro" controls></video>')
    page = detect_video(html, URL)
    assert [(m.url, m.type) for m in page.media] == [("http://site.test/m/intro.mp4", "mp4")]
    seen: list[bool] = []
    parse_html(html, url=URL, probe=lambda d, h: seen.append(nodes_have_video_markers(d, h)))
    assert seen == [True]


def test_an_empty_video_without_controls_is_a_poster_not_a_player() -> None:
    body = (
        '<video poster="/cover.jpg" width="400"></video>'
        '<audio controls><source src="/ep.mp3" type="audio/mpeg"></audio>'
    )
    page = detect_video(_page(body=body), URL)
    assert page.video_class == "none"
    assert page.media == ()
    # an empty player with controls (filled by script) is still a video page
    assert detect_video(_page(body="<video controls></video>"), URL).video_class == "video"
