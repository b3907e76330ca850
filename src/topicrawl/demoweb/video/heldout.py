"""Held-out video pages (``/heldout/``), session 20: forms neither the templates nor ``/hard/``
use, written and committed before the detector was run on them.

Play pages: a ``<video>`` built by script from sources in a JSON blob under other key names
(``renditions``/``href``/``mime``, ``streams``/``uri``); ``<source>`` whose type is only in the
URL query (``?format=mp4``, no extension, no ``type``); ``og:video:secure_url`` as the only
video meta; ``twitter:player:stream`` (one without a file extension, typed by its
``content_type``); JSON-LD ``VideoObject`` with ``contentUrl`` as a list; DASH whose
``BaseURL`` is relative to a nested MPD path (MPD-level and Period-level ``BaseURL``s); HLS
with ``#EXT-X-MEDIA`` video groups (camera angles); a video.js ``<video-js>`` element; a
``<video>`` whose manifest is in a ``data-hls`` attribute; a ``<link rel=preload as=video>``.
Video pages without media here: JSON-LD ``embedUrl`` only (the player page is a play page).
Negatives: audio podcasts with a ``<video poster>`` but no video source; pages quoting a video
tag's HTML in ``<pre><code>`` (escaped) and in ``<xmp>`` (raw text); camera shop product pages.

Truth rules are the site's (``media.py``), plus two decisions made while writing (before any
detector run): an ``#EXT-X-MEDIA:TYPE=VIDEO`` rendition's playlist is a video playlist, so it
is media (width/height unknown: None); a DASH BaseURL resolves against every enclosing
BaseURL (MPD, Period, AdaptationSet) and then the MPD's own address, as the DASH spec says.
No random stream: the rest of the site is unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from topicrawl.demoweb.video.media import MediaTruth, PlayMedia, json_ld
from topicrawl.demoweb.video.templates import PageSpec
from topicrawl.demoweb.video.truth import PageTruth

__all__ = ["heldout_pages"]

_HLS = "application/vnd.apple.mpegurl"
_PLAYLIST = b"#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6.0,\nseg0.ts\n#EXT-X-ENDLIST\n"


class _Page:
    def __init__(self, base: str, name: str) -> None:
        self.base = base
        self.name = name
        self.root = f"/media/ho-{name}"
        self.out = PlayMedia()

    def file(self, path: str, kind: str = "mp4", height: int | None = None) -> str:
        self.out.files.add(path.split("?", 1)[0])
        self.out.truth.append(MediaTruth(self.base + path.lstrip("/"), kind, None, height, None))
        return path

    def url(self, path: str) -> str:
        return self.base + path.lstrip("/")


def _play(base: str, case: str) -> tuple[str, str, PlayMedia]:
    p = _Page(base, case)
    h1 = f"<h1>Held-out {case}</h1>"
    if case == "jsonblob-0":
        a = p.file(f"{p.root}/720.mp4", height=720)
        b = p.file(f"{p.root}/360.mp4", height=360)
        blob = {
            "props": {
                "clip": {
                    "title": "Harbour",
                    "renditions": [
                        {"href": a, "mime": "video/mp4", "h": 720},
                        {"href": b, "mime": "video/mp4", "h": 360},
                    ],
                    "thumb": "/img/harbour.gif",
                }
            }
        }
        script = (
            "var d = JSON.parse(document.getElementById('__STATE__').textContent);"
            "var v = document.createElement('video'); v.controls = true;"
            "d.props.clip.renditions.forEach(function (r) { var s = document.createElement"
            "('source'); s.src = r.href; s.type = r.mime; v.appendChild(s); });"
            "document.getElementById('stage').appendChild(v);"
        )
        body = (
            h1
            + '<div id="stage"></div><script type="application/json" id="__STATE__">'
            + json.dumps(blob)
            + f"</script><script>{script}</script>"
        )
        return "", body, p.out
    if case == "jsonblob-1":
        root = "/hls/ho-jsonblob-1"
        master = f"{root}/main.m3u8"
        p.out.manifests[master] = (
            _HLS,
            b"#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=900000,RESOLUTION=640x360\nlow/index.m3u8\n",
        )
        p.out.manifests[f"{root}/low/index.m3u8"] = (_HLS, _PLAYLIST)
        p.out.files.add(f"{root}/low/seg0.ts")
        p.out.truth.append(MediaTruth(p.url(master), "hls"))
        p.out.truth.append(MediaTruth(p.url(f"{root}/low/index.m3u8"), "hls", 640, 360, 900_000))
        data = {"page": {"media": {"streams": [{"uri": master, "protocol": "hls"}]}}}
        body = (
            h1
            + '<div id="v"></div><script>window.__NUXT__ = '
            + json.dumps(data)
            + ";</script><script>mountPlayer(document.getElementById('v'), "
            "window.__NUXT__.page.media.streams[0].uri);</script>"
        )
        return "", body, p.out
    if case.startswith("querytype-"):
        n = case[-1]
        path = p.file(f"/stream/ho-q{n}?id=4{n}&format=mp4", height=None)
        body = (
            h1 + '<video controls preload="none"><source src="'
            f'{path.replace("&", "&amp;")}"></video>'
        )
        return "", body, p.out
    if case.startswith("ogsecure-"):
        path = p.file(f"{p.root}/clip.mp4")
        head = (
            '<meta property="og:type" content="video.other">'
            f'<meta property="og:video:secure_url" content="{p.url(path)}">'
            '<meta property="og:video:type" content="video/mp4">'
            '<meta property="og:video:width" content="1280">'
        )
        return head, h1 + '<div class="player-shell"></div>', p.out
    if case == "twstream-0":
        path = p.file(f"{p.root}/clip.mp4")
        head = (
            '<meta name="twitter:card" content="player">'
            f'<meta name="twitter:player:stream" content="{p.url(path)}">'
            '<meta name="twitter:player:stream:content_type" '
            'content="video/mp4; codecs=&quot;avc1.42E01E1, mp4a.40.2&quot;">'
        )
        return head, h1 + "<p>Tap to play.</p>", p.out
    if case == "twstream-1":
        path = p.file("/stream/ho-tw1/raw", kind="mp4")
        head = (
            '<meta name="twitter:card" content="player">'
            f'<meta name="twitter:player:stream" content="{p.url(path)}">'
            '<meta name="twitter:player:stream:content_type" content="video/mp4">'
        )
        return head, h1 + "<p>Tap to play.</p>", p.out
    if case == "ldlist-0":
        a = p.file(f"{p.root}/hd.mp4")
        b = p.file(f"{p.root}/sd.webm", kind="webm")
        obj = {
            "@context": "https://schema.org",
            "@type": "VideoObject",
            "name": "Field recording",
            "uploadDate": "2026-03-01",
            "contentUrl": [p.url(a), p.url(b)],
        }
        return json_ld(obj), h1 + '<div id="player"></div>', p.out
    if case.startswith("dashnested-"):
        n = case[-1]
        mpd_path = f"/dash/ho-nested-{n}/v2/stream/manifest.mpd"
        if n == "0":  # MPD-level relative BaseURL, then the Representation's
            outer, period = "<BaseURL>../media/</BaseURL>", ""
            base_dir = f"/dash/ho-nested-{n}/v2/media/"
        else:  # Period-level absolute-path BaseURL
            outer, period = "", f"<BaseURL>/cdn/ho-nested-{n}/</BaseURL>"
            base_dir = f"/cdn/ho-nested-{n}/"
        reps = []
        for h, w, bw in ((480, 854, 1_400_000), (1080, 1920, 5_000_000)):
            reps.append(
                f'<Representation id="v{h}" bandwidth="{bw}" width="{w}" height="{h}">'
                f"<BaseURL>{h}/video.mp4</BaseURL></Representation>"
            )
            p.out.files.add(f"{base_dir}{h}/video.mp4")
            p.out.truth.append(MediaTruth(p.url(f"{base_dir}{h}/video.mp4"), "mp4", w, h, bw))
        p.out.files.add(f"{base_dir}audio/a.m4a")
        mpd = (
            '<?xml version="1.0"?>\n<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" '
            f'mediaPresentationDuration="PT30S">{outer}<Period>{period}'
            '<AdaptationSet mimeType="video/mp4">' + "".join(reps) + "</AdaptationSet>"
            '<AdaptationSet mimeType="audio/mp4"><Representation id="a" bandwidth="96000">'
            "<BaseURL>audio/a.m4a</BaseURL></Representation></AdaptationSet></Period></MPD>\n"
        )
        p.out.manifests[mpd_path] = ("application/dash+xml", mpd.encode())
        p.out.truth.append(MediaTruth(p.url(mpd_path), "dash"))
        body = h1 + f'<video controls><source src="{mpd_path}" type="application/dash+xml"></video>'
        return "", body, p.out
    if case.startswith("hlsangles-"):
        n = case[-1]
        root = f"/hls/ho-angles-{n}"
        lines = ["#EXTM3U", "#EXT-X-VERSION:4"]
        for group in ("lo", "hi"):
            for angle in ("main", "side"):
                default = "YES" if angle == "main" else "NO"
                uri = f"{group}/{angle}.m3u8"
                lines.append(
                    f'#EXT-X-MEDIA:TYPE=VIDEO,GROUP-ID="{group}",NAME="{angle}",'
                    f'DEFAULT={default},AUTOSELECT=YES,URI="{uri}"'
                )
                p.out.manifests[f"{root}/{uri}"] = (_HLS, _PLAYLIST)
                p.out.files.add(f"{root}/{group}/seg0.ts")
                if angle == "side":  # the main angle is also the variant's own URI
                    p.out.truth.append(MediaTruth(p.url(f"{root}/{uri}"), "hls"))
        for group, h, w, bw in (("lo", 360, 640, 800_000), ("hi", 720, 1280, 2_800_000)):
            lines.append(f'#EXT-X-STREAM-INF:BANDWIDTH={bw},RESOLUTION={w}x{h},VIDEO="{group}"')
            lines.append(f"{group}/main.m3u8")
            p.out.truth.append(MediaTruth(p.url(f"{root}/{group}/main.m3u8"), "hls", w, h, bw))
        master = f"{root}/master.m3u8"
        p.out.manifests[master] = (_HLS, ("\n".join(lines) + "\n").encode())
        p.out.truth.append(MediaTruth(p.url(master), "hls"))
        kind = "application/vnd.apple.mpegurl" if n == "0" else "application/x-mpegurl"
        body = h1 + f'<video controls><source src="{master}" type="{kind}"></video>'
        return "", body, p.out
    if case == "videojs-0":
        root = "/hls/ho-videojs-0"
        master = f"{root}/playlist.m3u8"
        p.out.manifests[master] = (_HLS, _PLAYLIST)  # a media playlist: itself the media
        p.out.files.add(f"{root}/seg0.ts")
        p.out.truth.append(MediaTruth(p.url(master), "hls"))
        body = (
            h1 + '<video-js id="vid1" class="vjs-default-skin" controls preload="auto">'
            f'<source src="{master}" type="application/x-mpegURL"></video-js>'
            '<script src="/static/video.min.js"></script>'
        )
        return "", body, p.out
    if case == "datahls-0":
        root = "/hls/ho-datahls-0"
        master = f"{root}/index.m3u8"
        p.out.manifests[master] = (_HLS, _PLAYLIST)
        p.out.files.add(f"{root}/seg0.ts")
        p.out.truth.append(MediaTruth(p.url(master), "hls"))
        body = (
            h1 + f'<video id="v" controls playsinline data-hls="{master}" '
            'poster="/img/still.gif"></video>'
            "<script>var v = document.getElementById('v');"
            "var h = new Hls(); h.loadSource(v.dataset.hls); h.attachMedia(v);</script>"
        )
        return "", body, p.out
    # preload-0
    path = p.file(f"{p.root}/intro-1080.mp4")
    head = f'<link rel="preload" as="video" href="{path}" type="video/mp4">'
    body = (
        h1 + '<video id="intro" controls></video>'
        "<script>document.getElementById('intro').src = "
        "document.querySelector('link[as=video]').href;</script>"
    )
    return head, body, p.out


_PLAY = (
    "jsonblob-0",
    "jsonblob-1",
    "querytype-0",
    "querytype-1",
    "ogsecure-0",
    "ogsecure-1",
    "twstream-0",
    "twstream-1",
    "ldlist-0",
    "dashnested-0",
    "dashnested-1",
    "hlsangles-0",
    "hlsangles-1",
    "videojs-0",
    "datahls-0",
    "preload-0",
)


def _negative(case: str) -> tuple[str, str]:
    if case.startswith("podcast-"):
        n = case[-1]
        body = (
            f"<h1>Episode {n}: interviews</h1>"
            '<video poster="/img/cover.gif" width="400" height="400"></video>'
            f'<audio controls><source src="/media/ho-podcast-{n}/ep.mp3" type="audio/mpeg">'
            "</audio><p>Listen to the full episode.</p>"
        )
        return "", body
    if case == "precode-0":
        body = (
            "<h1>Embedding a video in HTML</h1><p>Write this:</p>"
            '<pre><code class="language-html">&lt;video controls&gt;\n'
            '  &lt;source src="https://cdn.example.com/movie.m3u8" '
            'type="application/x-mpegURL"&gt;\n&lt;/video&gt;</code></pre>'
        )
        return "", body
    if case == "precode-1":
        body = (
            "<h1>Old-school markup</h1><p>The raw listing:</p>"
            '<xmp><video controls src="/media/ho-precode-1/demo.mp4"></video></xmp>'
            "<p>That is all it takes.</p>"
        )
        return "", body
    # shop-N: a camera shop selling "video" cameras
    n = case[-1]
    product = {
        "@context": "https://schema.org",
        "@type": "Product",
        "name": f"ActionCam {n} 4K video camera",
        "description": "Records 4K video at 60 fps; MP4 and MOV video formats.",
        "offers": {"@type": "Offer", "price": "299.00", "priceCurrency": "EUR"},
    }
    head = '<meta property="og:type" content="product">' + json_ld(product)
    body = (
        f"<h1>ActionCam {n} - 4K video camera</h1>"
        "<table><tr><th>Video resolution</th><td>3840x2160 (4K)</td></tr>"
        "<tr><th>Video format</th><td>MP4 / MOV</td></tr></table>"
        f'<p><a href="/manuals/actioncam-{n}.pdf">Manual (PDF)</a></p>'
        "<button>Add to basket</button>"
    )
    return head, body


_NEGATIVE = ("podcast-0", "podcast-1", "precode-0", "precode-1", "shop-0", "shop-1")


def heldout_pages(base: str) -> Iterator[tuple[PageSpec, PageTruth, PlayMedia]]:
    """Every held-out page: spec, truth and served manifests and files."""
    for case in _PLAY:
        head, body, media = _play(base, case)
        path = f"/heldout/{case}.html"
        spec = PageSpec(path, "fixed", "en", f"Held-out {case}", head=head, body=body)
        yield spec, PageTruth("play", {}, tuple(media.truth), "en", "heldout-" + case), media
    # JSON-LD embedUrl only: a video page; its player page is a play page
    player = "/heldout/player/ldembed-0.html"
    out = PlayMedia()
    out.files.add("/media/ho-ldembed-0/540.mp4")
    out.truth.append(MediaTruth(base + "media/ho-ldembed-0/540.mp4", "mp4"))
    spec = PageSpec(
        player,
        "fixed",
        "en",
        "Player",
        body='<video controls src="/media/ho-ldembed-0/540.mp4"></video>',
    )
    yield spec, PageTruth("play", {}, tuple(out.truth), "en", "embed"), out
    obj = {
        "@context": "https://schema.org",
        "@type": "VideoObject",
        "name": "Night ferry",
        "uploadDate": "2026-05-02",
        "thumbnailUrl": base + "img/ferry.gif",
        "embedUrl": base + player[1:],
    }
    spec = PageSpec(
        "/heldout/ldembed-0.html",
        "fixed",
        "en",
        "Held-out ldembed",
        head=json_ld(obj),
        body="<h1>Night ferry</h1><div id='player-slot'></div>",
    )
    truth = PageTruth("iframe", {}, (), "en", "heldout-ldembed-0", embeds=(base + player[1:],))
    yield spec, truth, PlayMedia()
    for case in _NEGATIVE:
        head, body = _negative(case)
        path = f"/heldout/{case}.html"
        spec = PageSpec(path, "fixed", "en", f"Held-out {case}", head=head, body=body)
        yield spec, PageTruth("negative", {}, (), "en", "heldout-" + case), PlayMedia()
