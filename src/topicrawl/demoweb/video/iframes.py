"""Player ``<iframe>`` pages of the demo video site (``/hard/iframe-*.html``), session 20.

A page that shows its video through an ``<iframe>`` is a video page but not a play page: its
media are on the player page the iframe loads (``/hard/player/*.html``, a play page of its
own, ``subkind="embed"``). :attr:`PageTruth.embeds` names the player page a resolver should
follow. Forms: ``allowfullscreen``, an ``allow`` with autoplay, a player-like address only
(``/embed/``), a lazy ``data-src`` iframe, a ``player.php?id=`` address; and one cross-origin
iframe whose player page is on ``cross_base`` (a second loopback host serving the same site)
when the site is built with one (on the same site otherwise). Player pages hold an MP4
``<source>``, an HLS master or a JSON player config. Built from no random stream: adding them
left every other page byte-for-byte the same.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from topicrawl.demoweb.video.media import MediaTruth, PlayMedia
from topicrawl.demoweb.video.templates import PageSpec
from topicrawl.demoweb.video.truth import PageTruth

__all__ = ["iframe_pages"]

_HLS = "application/vnd.apple.mpegurl"

# (case, how the iframe is written: {src} is the player page's address, media kind)
_CASES = (
    ("fullscreen", '<iframe src="{src}" width="640" height="360" allowfullscreen></iframe>', "mp4"),
    ("autoplay", '<iframe src="{src}" allow="autoplay; encrypted-media"></iframe>', "hls"),
    ("embedpath", '<iframe src="{src}" width="560" height="315"></iframe>', "config"),
    ("lazy", '<iframe class="lazyload" data-src="{src}" allowfullscreen></iframe>', "mp4"),
    ("phpplayer", '<iframe src="{src}" frameborder="0" allowfullscreen></iframe>', "hls"),
    ("cross", '<iframe src="{src}" allow="fullscreen"></iframe>', "mp4"),
)


def _player_path(case: str) -> str:
    if case == "embedpath":
        return "/hard/embed/clip-7.html"
    if case == "phpplayer":
        return "/hard/player.php"  # served with ?id=9 (the query is ignored by the site)
    return f"/hard/player/{case}.html"


def _player(case: str, kind: str, base: str) -> tuple[str, PlayMedia]:
    out = PlayMedia()
    root = f"/media/iframe-{case}"
    if kind == "mp4":
        path = f"{root}/720p.mp4"
        out.files.add(path)
        out.truth.append(MediaTruth(base + path[1:], "mp4"))  # the page states no height
        body = f'<video controls width="100%"><source src="{path}" type="video/mp4"></video>'
    elif kind == "hls":
        hroot = f"/hls/iframe-{case}"
        variant = f"{hroot}/480p/index.m3u8"
        out.manifests[variant] = (
            _HLS,
            b"#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6.0,\nseg0.ts\n#EXT-X-ENDLIST\n",
        )
        out.files.add(f"{hroot}/480p/seg0.ts")
        master = f"{hroot}/master.m3u8"
        out.manifests[master] = (
            _HLS,
            b"#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1400000,RESOLUTION=854x480\n480p/index.m3u8\n",
        )
        out.truth.append(MediaTruth(base + master[1:], "hls"))
        out.truth.append(MediaTruth(base + variant[1:], "hls", 854, 480, 1_400_000))
        body = f'<video controls><source src="{master}" type="application/x-mpegURL"></video>'
    else:  # a JSON player config
        path = f"{root}/1080p.mp4"
        out.files.add(path)
        out.truth.append(MediaTruth(base + path[1:], "mp4", None, 1080, None))
        config = json.dumps({"sources": [{"file": path, "label": "1080p", "type": "mp4"}]})
        body = f'<div id="p"></div><script>var playerConfig = {config};</script>'
    return body, out


def iframe_pages(
    base: str, cross_base: str | None = None
) -> Iterator[tuple[PageSpec, PageTruth, PlayMedia]]:
    """Every iframe page and player page: spec, truth and served media."""
    for case, markup, kind in _CASES:
        player = _player_path(case)
        body, media = _player(case, kind, base)
        spec = PageSpec(player, "fixed", "en", f"Player {case}", body=body)
        yield spec, PageTruth("play", {}, tuple(media.truth), "en", "embed"), media
        host = (cross_base or base) if case == "cross" else base
        src = host + player[1:] + ("?id=9" if case == "phpplayer" else "")
        shown = src if case == "cross" else src[len(base) - 1 :]  # same site: a root path
        page = (
            f"<h1>Watch: iframe case {case}</h1><p>The film plays below.</p>"
            + markup.format(src=shown)
            + "<p>Comments are closed.</p>"
        )
        path = f"/hard/iframe-{case}.html"
        spec = PageSpec(path, "fixed", "en", f"Iframe {case}", body=page)
        truth = PageTruth("iframe", {}, (), "en", f"iframe-{case}", embeds=(src,))
        yield spec, truth, PlayMedia()
