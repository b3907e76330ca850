"""The demo video site's media: player markup for each delivery, HLS/DASH manifests, media bodies.

A play page delivers its media one way (:class:`Delivery`); :func:`play_media` returns the
markup to put in the page (head and body parts), the manifests to serve and the ground truth:
the direct media URLs a resolver should list. What counts as a media URL (the truth):

- every ``<source>``/``src`` video file (MP4, WebM), with its height when the page says it;
- an HLS master playlist and each of its video variant playlists (height, BANDWIDTH);
- a DASH MPD and each video Representation's BaseURL (height, bandwidth);
- a JSON-LD ``VideoObject.contentUrl``, an ``og:video`` / ``twitter:player:stream`` file and the
  files and manifests of an embedded player config.

Not media URLs: audio-only renditions, segments (``.ts``), posters, player/embed pages
(``embedUrl``, ``twitter:player``), and anything on a hard-negative page.
"""

from __future__ import annotations

import enum
import hashlib
import json
import random
from dataclasses import dataclass, field

__all__ = [
    "HEIGHTS",
    "Delivery",
    "MediaTruth",
    "PlayMedia",
    "audio_hls",
    "json_ld",
    "media_body",
    "play_media",
]

HEIGHTS = (360, 480, 720, 1080)
_WIDTH = {360: 640, 480: 854, 720: 1280, 1080: 1920}
_BITRATE = {360: 800_000, 480: 1_400_000, 720: 2_800_000, 1080: 5_000_000}
_SEGMENTS = 3


class Delivery(enum.StrEnum):
    """How a play page gives its media."""

    MP4 = "mp4"  # <video><source src=...mp4 size=720>
    HLS = "hls"  # <video><source src=master.m3u8 type=application/x-mpegURL>
    DASH = "dash"  # <video><source src=manifest.mpd type=application/dash+xml>
    JSONLD = "jsonld"  # JSON-LD VideoObject.contentUrl, player built by script
    OPENGRAPH = "og"  # og:video + twitter:player:stream, player built by script
    CONFIG = "config"  # JSON player config in a script (HLS master + an MP4 fallback)
    EMBED = "embed"  # the small embed page a JSON-LD embedUrl / twitter:player points at


@dataclass(frozen=True, slots=True)
class MediaTruth:
    """One direct media URL of a play page (absolute), its type and what the page says of it.

    ``type`` is ``"mp4"``, ``"webm"``, ``"hls"`` or ``"dash"``; width, height and bitrate
    (bits per second) are None where nothing on the page or in its manifest states them.
    """

    url: str
    type: str
    width: int | None = None
    height: int | None = None
    bitrate: int | None = None


@dataclass(slots=True)
class PlayMedia:
    """What one play page's media puts into the page and onto the server."""

    head: str = ""  # meta tags / JSON-LD for <head>
    player: str = ""  # the player markup in <body>
    scripts: str = ""  # config scripts at the end of <body>
    manifests: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # path -> (ctype, body)
    files: set[str] = field(default_factory=set)  # media file paths served (segments included)
    truth: list[MediaTruth] = field(default_factory=list)


def _heights(rng: random.Random) -> tuple[int, ...]:
    return rng.choice(((360, 720), (480, 720, 1080), (360, 480, 720), (720, 1080)))


def _hls(base: str, mid: str, heights: tuple[int, ...], out: PlayMedia, *, audio: bool) -> str:
    """Adds the master + media playlists of ``mid`` to ``out``; returns the master's path."""
    root = f"/hls/{mid}"
    lines = ["#EXTM3U", "#EXT-X-VERSION:4", "#EXT-X-INDEPENDENT-SEGMENTS"]
    if audio:
        lines.append(
            '#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="Main",DEFAULT=YES,AUTOSELECT=YES,'
            'URI="audio/index.m3u8"'
        )
        _media_playlist(out, f"{root}/audio", "aac")
    for h in heights:
        group = ',AUDIO="aud"' if audio else ""
        lines.append(
            f"#EXT-X-STREAM-INF:BANDWIDTH={_BITRATE[h]},RESOLUTION={_WIDTH[h]}x{h},"
            f'CODECS="avc1.4d401f,mp4a.40.2"{group}'
        )
        lines.append(f"{h}p/index.m3u8")
        _media_playlist(out, f"{root}/{h}p", "ts")
        out.truth.append(
            MediaTruth(f"{base}{root[1:]}/{h}p/index.m3u8", "hls", _WIDTH[h], h, _BITRATE[h])
        )
    master = f"{root}/master.m3u8"
    out.manifests[master] = ("application/vnd.apple.mpegurl", ("\n".join(lines) + "\n").encode())
    out.truth.append(MediaTruth(f"{base}{master[1:]}", "hls"))
    return master


def _media_playlist(out: PlayMedia, root: str, ext: str) -> None:
    lines = ["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:6", "#EXT-X-PLAYLIST-TYPE:VOD"]
    for n in range(_SEGMENTS):
        lines += ["#EXTINF:6.0,", f"seg{n}.{ext}"]
        out.files.add(f"{root}/seg{n}.{ext}")
    lines.append("#EXT-X-ENDLIST")
    out.manifests[f"{root}/index.m3u8"] = (
        "application/vnd.apple.mpegurl",
        ("\n".join(lines) + "\n").encode(),
    )


def audio_hls(mid: str, out: PlayMedia) -> str:
    """An audio-only HLS master (a hard negative's manifest); returns its path. No truth."""
    root = f"/hls/{mid}"
    text = '#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=128000,CODECS="mp4a.40.2"\n128k/index.m3u8\n'
    out.manifests[f"{root}/master.m3u8"] = ("application/vnd.apple.mpegurl", text.encode())
    _media_playlist(out, f"{root}/128k", "aac")
    return f"{root}/master.m3u8"


def _dash(base: str, mid: str, heights: tuple[int, ...], out: PlayMedia) -> str:
    root = f"/dash/{mid}"
    reps = []
    for h in heights:
        reps.append(
            f'      <Representation id="{h}p" bandwidth="{_BITRATE[h]}" width="{_WIDTH[h]}" '
            f'height="{h}" codecs="avc1.4d401f"><BaseURL>{h}p.mp4</BaseURL></Representation>'
        )
        out.files.add(f"{root}/{h}p.mp4")
        out.truth.append(MediaTruth(f"{base}{root[1:]}/{h}p.mp4", "mp4", _WIDTH[h], h, _BITRATE[h]))
    out.files.add(f"{root}/audio.m4a")
    mpd = f"""<?xml version="1.0" encoding="UTF-8"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT2M0S"
     minBufferTime="PT2S" profiles="urn:mpeg:dash:profile:isoff-on-demand:2011">
  <Period id="0">
    <AdaptationSet contentType="video" mimeType="video/mp4" segmentAlignment="true">
{chr(10).join(reps)}
    </AdaptationSet>
    <AdaptationSet contentType="audio" mimeType="audio/mp4" lang="und">
      <Representation id="audio" bandwidth="128000" codecs="mp4a.40.2">\
<BaseURL>audio.m4a</BaseURL></Representation>
    </AdaptationSet>
  </Period>
</MPD>
"""
    path = f"{root}/manifest.mpd"
    out.manifests[path] = ("application/dash+xml", mpd.encode())
    out.truth.append(MediaTruth(f"{base}{path[1:]}", "dash"))
    return path


def _file(base: str, mid: str, h: int, out: PlayMedia, ext: str = "mp4") -> str:
    path = f"/media/{mid}/{h}p.{ext}"
    out.files.add(path)
    out.truth.append(MediaTruth(f"{base}{path[1:]}", ext, None, h, None))
    return path


def play_media(
    base: str, mid: str, delivery: Delivery, rng: random.Random, *, name: str = ""
) -> PlayMedia:
    """The markup, manifests and truth of play page ``mid`` delivered as ``delivery``.

    ``base`` is the site's base URL (``http://host:port/``); absolute URLs use it; ``name`` is
    the video's name in JSON-LD.
    """
    out = PlayMedia()
    heights = _heights(rng)
    poster = f"/img/{mid}.gif"
    if delivery in (Delivery.MP4, Delivery.EMBED):
        sources = []
        for h in heights if delivery is Delivery.MP4 else heights[-1:]:
            src = _file(base, mid, h, out)
            sources.append(f'<source src="{src}" type="video/mp4" size="{h}">')
        if delivery is Delivery.MP4 and rng.random() < 0.3:
            src = _file(base, mid, heights[0], out, "webm")
            sources.append(f'<source src="{src}" type="video/webm" size="{heights[0]}">')
        out.player = (
            f'<video controls preload="metadata" poster="{poster}" width="{_WIDTH[heights[-1]]}">'
            + "".join(sources)
            + "<p>Your browser cannot play this video.</p></video>"
        )
    elif delivery is Delivery.HLS:
        master = _hls(base, mid, heights, out, audio=rng.random() < 0.5)
        out.player = (
            f'<video id="hls-player" controls poster="{poster}">'
            f'<source src="{master}" type="application/x-mpegURL"></video>'
            '<script src="/static/hls.min.js"></script>'
        )
    elif delivery is Delivery.DASH:
        mpd = _dash(base, mid, heights, out)
        out.player = (
            f'<video id="dash-player" controls poster="{poster}">'
            f'<source src="{mpd}" type="application/dash+xml"></video>'
            '<script src="/static/dash.all.min.js"></script>'
        )
    elif delivery is Delivery.JSONLD:
        h = heights[-1]
        src = _file(base, mid, h, out)
        out.truth[-1] = MediaTruth(f"{base}{src[1:]}", "mp4", None, h, _BITRATE[h])
        obj = {
            "@context": "https://schema.org",
            "@type": "VideoObject",
            "name": name or mid,
            "thumbnailUrl": f"{base}{poster[1:]}",
            "uploadDate": "2024-05-01",
            "duration": "PT2M",
            "contentUrl": f"{base}{src[1:]}",
            "embedUrl": f"{base}embed/{mid}.html",
            "height": h,
            "width": _WIDTH[h],
            "bitrate": f"{_BITRATE[h] // 1000} kbps",
        }
        out.head = json_ld(obj)
        out.player = f'<div class="js-player" data-id="{mid}"><img src="{poster}" alt=""></div>'
    elif delivery is Delivery.OPENGRAPH:
        h = heights[-1]
        src = _file(base, mid, h, out)
        out.truth[-1] = MediaTruth(f"{base}{src[1:]}", "mp4", _WIDTH[h], h, None)
        url = f"{base}{src[1:]}"
        out.head = (
            f'<meta property="og:type" content="video.movie">'
            f'<meta property="og:video" content="{url}">'
            f'<meta property="og:video:type" content="video/mp4">'
            f'<meta property="og:video:width" content="{_WIDTH[h]}">'
            f'<meta property="og:video:height" content="{h}">'
            f'<meta property="og:image" content="{base}{poster[1:]}">'
            f'<meta name="twitter:card" content="player">'
            f'<meta name="twitter:player" content="{base}embed/{mid}.html">'
            f'<meta name="twitter:player:stream" content="{url}">'
        )
        out.player = f'<div class="js-player" data-id="{mid}"><img src="{poster}" alt=""></div>'
    else:  # CONFIG
        master = _hls(base, mid, heights, out, audio=False)
        h = heights[0]
        fallback = _file(base, mid, h, out)
        config = {
            "id": mid,
            "autoplay": False,
            "poster": poster,
            "sources": [
                {"file": master, "type": "hls"},
                {"file": fallback, "type": "mp4", "label": f"{h}p"},
            ],
        }
        text = json.dumps(config, ensure_ascii=False).replace("</", "<\\/")
        out.player = f'<div id="player" class="vplayer" data-id="{mid}"></div>'
        if rng.random() < 0.5:
            out.scripts = f'<script type="application/json" id="player-config">{text}</script>'
        else:
            out.scripts = (
                f"<script>window.playerConfig = {text};\nplayer.setup(playerConfig);</script>"
            )
    return out


def json_ld(obj: object) -> str:
    """``obj`` as a JSON-LD script element (``</`` escaped)."""
    text = json.dumps(obj, ensure_ascii=False).replace("</", "<\\/")
    return f'<script type="application/ld+json">{text}</script>'


_MAGIC = {
    "mp4": b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom",
    "m4a": b"\x00\x00\x00\x18ftypM4A \x00\x00\x00\x00M4A mp42",
    "webm": b"\x1a\x45\xdf\xa3",
    "ts": b"\x47\x40\x00\x10",
    "aac": b"\xff\xf1\x50\x80",
    "mp3": b"ID3\x04\x00",
}
_CTYPE = {
    "mp4": "video/mp4",
    "m4a": "audio/mp4",
    "webm": "video/webm",
    "ts": "video/mp2t",
    "aac": "audio/aac",
    "mp3": "audio/mpeg",
}


def media_body(path: str, size: int = 4096) -> tuple[str, bytes]:
    """A small, deterministic media body for ``path`` (its content type and bytes)."""
    ext = path.rsplit(".", 1)[-1]
    magic = _MAGIC.get(ext, b"")
    filler = hashlib.sha256(path.encode()).digest()
    body = magic + (filler * (size // len(filler) + 1))[: size - len(magic)]
    return _CTYPE.get(ext, "application/octet-stream"), body
