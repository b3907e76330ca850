"""Hard negatives of the demo video site: pages with video-like markup that are not video pages.

- ``background``: a hero ``<video autoplay muted loop playsinline>`` without controls.
- ``audio``: ``<audio>`` with an MP3, an audio-only HLS master (in ``<audio>`` or in an
  ``audioOnly`` player config), ``og:audio``, a JSON-LD ``PodcastEpisode``.
- ``video_list``: a grid of muted preview clips linking to play pages, with a JSON-LD
  ``ItemList`` of ``VideoObject`` entries that carry no media URL.
- ``mention``: articles about video encoding that show ``<video>`` markup escaped in code.
"""

from __future__ import annotations

import html
import json
import random
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from topicrawl.demoweb.video.media import PlayMedia, audio_hls, json_ld
from topicrawl.demoweb.video.templates import PageSpec
from topicrawl.demoweb.video.truth import PageTruth

if TYPE_CHECKING:
    from topicrawl.demoweb.video.catalog import Title

__all__ = ["negative_pages"]

_Made = tuple[str, str, PlayMedia]  # head, body, media

_HERO = (
    "Stream the stories you love",
    "New seasons every Friday",
    "Cinema, at home",
    "Watch together",
)
_TOPICS = (
    ("How we encode video", "Every video we publish is encoded into HLS and DASH renditions"),
    ("Why adaptive streaming", "A video player picks the rendition that fits the connection"),
    ("Captions for every video", "Subtitles help people watch a video without sound"),
    ("Our video pipeline", "Upload, transcode to 360p, 720p and 1080p, package, publish"),
)


def _background(n: int, rng: random.Random) -> tuple[str, str, PlayMedia]:
    media = PlayMedia()
    path = f"/media/bg{n}/720p.mp4"
    media.files.add(path)
    muted = rng.choice(('muted=""', "muted", 'muted="muted"'))
    body = (
        f'<section class="hero"><video class="hero-bg" autoplay {muted} loop playsinline '
        f'poster="/img/bg{n}.gif"><source src="{path}" type="video/mp4"></video>'
        f'<div class="hero-text"><h1>{rng.choice(_HERO)}</h1>'
        "<p>Thousands of films and series in English and Chinese.</p>"
        '<a class="cta" href="/index.html">Browse</a></div></section>'
    )
    return "", body, media


def _audio(n: int, rng: random.Random) -> tuple[str, str, PlayMedia]:
    media = PlayMedia()
    style = n % 4
    intro = f"<h1>Soundtrack podcast, episode {n}</h1><p>Composers talk about their scores.</p>"
    head = ""
    if style == 0:
        mp3 = f"/media/pod{n}/128k.mp3"
        media.files.add(mp3)
        head = (
            '<meta property="og:type" content="music.song">'
            f'<meta property="og:audio" content="{mp3}">'
        )
        body = (
            f'{intro}<audio controls preload="none"><source src="{mp3}" type="audio/mpeg"></audio>'
        )
    elif style == 1:
        master = audio_hls(f"pod{n}", media)
        body = f'{intro}<audio controls src="{master}"></audio>'
    elif style == 2:
        master = audio_hls(f"pod{n}", media)
        config = {"id": f"pod{n}", "audioOnly": True, "sources": [{"file": master, "type": "hls"}]}
        body = (
            f'{intro}<div id="player" class="vplayer"></div>'
            f'<script type="application/json" id="player-config">{json.dumps(config)}</script>'
        )
    else:
        mp3 = f"/media/pod{n}/64k.mp3"
        media.files.add(mp3)
        head = json_ld(
            {
                "@context": "https://schema.org",
                "@type": "PodcastEpisode",
                "name": f"Episode {n}",
                "associatedMedia": {"@type": "AudioObject", "contentUrl": mp3},
            }
        )
        body = f'{intro}<audio controls><source src="{mp3}" type="audio/mpeg"></audio>'
    if rng.random() < 0.5:
        body += "<p>Prefer video? Our video interviews are on the play pages.</p>"
    return head, body, media


def _video_list(n: int, rng: random.Random, titles: list[Title]) -> tuple[str, str, PlayMedia]:
    media = PlayMedia()
    picks = rng.sample(titles, min(6, len(titles)))
    cards = []
    items = []
    for k, title in enumerate(picks):
        play = f"/play/{title.id}-1.html"
        clip = f"/media/prev{n}-{k}/360p.mp4"
        media.files.add(clip)
        cards.append(
            f'<a class="clip" href="{play}"><video class="preview" muted loop preload="none" '
            f'poster="/img/{title.id}.gif"><source src="{clip}" type="video/mp4"></video>'
            f"<span>{html.escape(title.name)}</span></a>"
        )
        items.append(
            {
                "@type": "ListItem",
                "position": k + 1,
                "item": {"@type": "VideoObject", "name": title.name, "url": play},
            }
        )
    head = json_ld(
        {"@context": "https://schema.org", "@type": "ItemList", "itemListElement": items}
    )
    body = f'<h1>Trending clips {n}</h1><div class="clip-grid">{"".join(cards)}</div>'
    return head, body, media


def _mention(n: int, rng: random.Random, titles: list[Title]) -> tuple[str, str, PlayMedia]:
    heading, lead = _TOPICS[n % len(_TOPICS)]
    title = rng.choice(titles)
    code = html.escape(
        '<video controls>\n  <source src="/media/example/720p.mp4" type="video/mp4">\n</video>\n'
        '<meta property="og:video" content="https://example.org/v.mp4">'
    )
    body = (
        f"<article><h1>{heading}</h1><p>{lead}. A video page carries a player; a play page "
        "streams the video itself, as MP4 or through an m3u8 playlist.</p>"
        f"<pre><code>{code}</code></pre>"
        f'<p>See it in practice on <a href="/play/{title.id}-1.html">'
        f"{html.escape(title.name)}</a>.</p><p>视频编码与播放：我们为每个视频生成多种清晰度。</p>"
        "</article>"
    )
    return '<meta property="og:type" content="article">', body, PlayMedia()


def negative_pages(
    rng: random.Random, titles: list[Title]
) -> Iterator[tuple[PageSpec, PageTruth, PlayMedia]]:
    """Every hard-negative page: its spec, its truth and the media files it references."""
    makers: dict[str, tuple[int, Callable[[int], _Made], str, str]] = {
        "background": (13, lambda n: _background(n, rng), "/promo/{n}.html", "Promo"),
        "audio": (16, lambda n: _audio(n, rng), "/podcast/{n}.html", "Podcast"),
        "video_list": (12, lambda n: _video_list(n, rng, titles), "/clips/{n}.html", "Clips"),
        "mention": (12, lambda n: _mention(n, rng, titles), "/blog/{n}.html", "Blog"),
    }
    for subkind, (count, make, pattern, name) in makers.items():
        for n in range(count):
            head, body, media = make(n)
            path = pattern.format(n=n)
            if subkind == "background" and n == 0:
                path = "/about.html"
            elif subkind == "mention" and n == 0:
                path = "/blog/encoding.html"
            spec = PageSpec(path, "fixed", "en", f"{name} {n}", head=head, body=body)
            yield spec, PageTruth("negative", {}, (), "en", subkind), media
