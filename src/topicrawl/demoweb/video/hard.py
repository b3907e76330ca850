"""Hard cases of the demo video site (``/hard/...``): markup the main templates never use.

Written after the detector, to test it on forms it was not built around: lazy ``data-src``
sources, upper-case markup, signed query strings, JSON-LD ``@graph``, a JavaScript player call
with unquoted keys, muted autoplay players with controls, DASH with segment templates only,
HLS with CRLF line ends and a BOM, ``type`` with codecs; and negatives: an upload form whose
script names an example ``.mp4``, GIF-like article clips, a download link without a player,
an MP3 played through a ``<video>`` element. Built from their own random stream, so adding
them left every other page of the site byte-for-byte the same.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from topicrawl.demoweb.video.media import MediaTruth, PlayMedia, json_ld
from topicrawl.demoweb.video.templates import PageSpec
from topicrawl.demoweb.video.truth import PageTruth

__all__ = ["hard_pages"]

_HLS = "application/vnd.apple.mpegurl"


def _mp4(base: str, out: PlayMedia, path: str, height: int | None = None) -> str:
    out.files.add(path.split("?", 1)[0])
    out.truth.append(MediaTruth(base + path.lstrip("/"), "mp4", None, height, None))
    return path


def _hls_crlf(base: str, root: str, out: PlayMedia) -> str:
    lines = ["\ufeff#EXTM3U", "#EXT-X-VERSION:3"]
    for h, w, bw in ((360, 640, 700_000), (720, 1280, 2_500_000)):
        variant = f"{base}{root.lstrip('/')}/{h}/index.m3u8"
        lines += [f"#EXT-X-STREAM-INF:BANDWIDTH={bw},RESOLUTION={w}x{h}", variant]
        out.truth.append(MediaTruth(variant, "hls", w, h, bw))
        segment = f"{root}/{h}/seg0.ts"
        out.files.add(segment)
        out.manifests[f"{root}/{h}/index.m3u8"] = (
            _HLS,
            b"#EXTM3U\r\n#EXT-X-TARGETDURATION:6\r\n#EXTINF:6,\r\nseg0.ts\r\n#EXT-X-ENDLIST\r\n",
        )
    master = f"{root}/master.m3u8"
    out.manifests[master] = (_HLS, ("\r\n".join(lines) + "\r\n").encode())
    out.truth.append(MediaTruth(base + master.lstrip("/"), "hls"))
    return master


def _segment_template_mpd(base: str, root: str, out: PlayMedia) -> str:
    mpd = """<?xml version="1.0"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT1M">
  <Period><AdaptationSet mimeType="video/mp4">
    <SegmentTemplate initialization="init-$RepresentationID$.mp4"
      media="$RepresentationID$-$Number$.m4s" startNumber="1" duration="6" timescale="1"/>
    <Representation id="v720" bandwidth="2500000" width="1280" height="720"/>
  </AdaptationSet></Period>
</MPD>
"""
    path = f"{root}/manifest.mpd"
    out.manifests[path] = ("application/dash+xml", mpd.encode())
    out.truth.append(MediaTruth(base + path.lstrip("/"), "dash"))
    # The representation is listed by its initialization segment (manifests.py).
    out.files.add(f"{root}/init-v720.mp4")
    out.truth.append(
        MediaTruth(f"{base}{root.lstrip('/')}/init-v720.mp4", "mp4", 1280, 720, 2500000)
    )
    return path


def _play_case(case: str, n: int, base: str, rng: random.Random) -> tuple[str, str, PlayMedia]:
    out = PlayMedia()
    root = f"/media/hard-{case}-{n}"
    title = f"<h1>Hard case {case} {n}</h1>"
    if case == "lazy":
        src = _mp4(base, out, f"{root}/720p.mp4")
        body = f'<video controls class="lazy"><source data-src="{src}" type="video/mp4"></video>'
    elif case == "upper":
        src = _mp4(base, out, f"{root}/480p.MP4")
        body = f'<VIDEO CONTROLS SRC="{src}" PRELOAD="NONE"></VIDEO>'
    elif case == "signed":
        token = f"{rng.getrandbits(64):016x}"
        src = _mp4(base, out, f"{root}/720p.mp4?token={token}&exp=1900000000")
        body = (
            '<video controls><source src="'
            + src.replace("&", "&amp;")
            + '" type="video/mp4"></video>'
        )
    elif case == "graph":
        src = _mp4(base, out, f"{root}/1080p.mp4")
        graph = {
            "@context": "https://schema.org",
            "@graph": [
                {"@type": "WebPage", "name": "Watch"},
                {"@type": "VideoObject", "name": "clip", "contentUrl": src},
            ],
        }
        return json_ld(graph), title + '<div id="player"></div>', out
    elif case == "jscall":
        master = _hls_crlf(base, f"/hls/hard-{case}-{n}", out)
        call = f"jwplayer('p').setup({{file: '{master}', width: 640}});"
        body = f"<div id='p'></div><script>{call}</script>"
    elif case == "mutedplayer":
        src = _mp4(base, out, f"{root}/720p.mp4")
        body = f'<video autoplay muted controls playsinline src="{src}"></video>'
    elif case == "segtemplate":
        mpd = _segment_template_mpd(base, f"/dash/hard-{case}-{n}", out)
        body = f'<video controls><source src="{mpd}" type="application/dash+xml"></video>'
    elif case == "crlf":
        master = _hls_crlf(base, f"/hls/hard-{case}-{n}", out)
        body = (
            f'<video controls><source src="{master}" type="application/vnd.apple.mpegurl"></video>'
        )
    else:  # codecs
        src = _mp4(base, out, f"{root}/720p.mp4")
        body = (
            f'<video controls><source src="{src}" '
            'type="video/mp4; codecs=&quot;avc1.42E01E, mp4a.40.2&quot;"></video>'
        )
    return "", title + body, out


def _negative_case(case: str, n: int) -> tuple[str, str, PlayMedia]:
    out = PlayMedia()
    root = f"/media/hard-{case}-{n}"
    if case == "upload":
        body = (
            "<h1>Upload your video</h1><form><input type='file' accept='video/*'></form>"
            "<script>var uploader = {accept: 'video/*', example: 'my-holiday-video.mp4', "
            "maxSize: '2 GB'};</script>"
        )
    elif case == "gifclip":
        out.files.add(f"{root}/clip.mp4")
        body = (
            "<article><h1>Ten cats</h1><p>Number one:</p>"
            f'<video autoplay loop muted playsinline src="{root}/clip.mp4"></video></article>'
        )
    elif case == "download":
        out.files.add(f"{root}/720p.mp4")
        body = (
            "<h1>Press kit</h1><ul>"
            f'<li><a href="{root}/720p.mp4" download>Download the trailer (MP4, 720p)</a></li>'
            "<li><a href='/img/press.gif'>Poster</a></li></ul>"
        )
    else:  # audiovideo: an MP3 through a <video> element
        out.files.add(f"{root}/talk.mp3")
        body = (
            "<h1>Director's commentary (audio)</h1>"
            f'<video controls src="{root}/talk.mp3" poster="/img/talk.gif"></video>'
        )
    return "", body, out


_PLAY = {
    "lazy": 4,
    "upper": 3,
    "signed": 3,
    "graph": 3,
    "jscall": 3,
    "mutedplayer": 3,
    "segtemplate": 3,
    "crlf": 2,
    "codecs": 2,
}
_NEGATIVE = {"upload": 3, "gifclip": 3, "download": 2, "audiovideo": 2}


def hard_pages(seed: int, base: str) -> Iterator[tuple[PageSpec, PageTruth, PlayMedia]]:
    """Every hard-case page: its spec, truth and served manifests and files."""
    rng = random.Random(f"video-hard-{seed}")
    for case, count in _PLAY.items():
        for n in range(count):
            head, body, media = _play_case(case, n, base, rng)
            path = f"/hard/{case}-{n}.html"
            spec = PageSpec(path, "fixed", "en", f"Hard {case} {n}", head=head, body=body)
            yield spec, PageTruth("play", {}, tuple(media.truth), "en", f"hard-{case}"), media
    for case, count in _NEGATIVE.items():
        for n in range(count):
            head, body, media = _negative_case(case, n)
            path = f"/hard/{case}-{n}.html"
            spec = PageSpec(path, "fixed", "en", f"Hard {case} {n}", head=head, body=body)
            yield spec, PageTruth("negative", {}, (), "en", f"hard-{case}"), media
