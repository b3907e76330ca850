"""Is this page a video page, a play page? Its candidate media URLs, from its markup alone.

Signals read: ``<video>``/``<source>`` (a muted ``<video>`` without controls is decoration:
a background or a hover preview, not a player), ``og:video*``, ``og:type video.*``,
``twitter:player*``, JSON-LD ``VideoObject`` (``contentUrl``; ``embedUrl`` is a player page)
and ``Movie``/``TVSeries``/``Episode`` (a video page; ``VideoObject``s inside an ``ItemList`` are
a list's entries, not this page's video), player configs in scripts (JSON, or media URLs
in a script's string literals), and player ``<iframe>``s (``allowfullscreen``, an ``allow``
with fullscreen or autoplay, or a player-like address such as ``/embed/``, ``player.``): the
page is a video page and the iframe's page an embed, followed like ``twitter:player`` (its
media are listed on that page, not on this one). Audio elements and audio types are never
video media.

A few substring checks on the lower-cased page come first, so a page without any video
marker costs no parse.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from urllib.parse import parse_qsl, urljoin, urlsplit

from selectolax.lexbor import LexborHTMLParser, LexborNode

from topicrawl.parse.video.model import MediaUrl, VideoPage

__all__ = [
    "MARKERS",
    "detect_video",
    "has_video_markers",
    "media_type",
    "nodes_have_video_markers",
    "parse_bitrate",
]

# Substrings of the lower-cased page: ``in`` on one lower-cased copy is several times cheaper
# than one case-insensitive regular expression with alternatives, and each substring costs a
# scan of the page, so they are few (benchmarks/video/README.md): "video" covers <video> (so
# its <source> types), og:video*, og:type video.*, VideoObject and the video/* types;
# "ld+json" any JSON-LD (Movie, TVSeries, Episode); the rest, player configs without the word.
MARKERS = ("video", "m3u8", ".mpd", ".mp4", ".webm", "twitter:player", "ld+json", "<iframe")
_ABOUT_TYPES = {"movie", "tvseries", "tvepisode", "episode", "movieseries", "clip", "videoobject"}
_MEDIA_EXT = re.compile(r"\.(m3u8|mpd|mp4|m4v|webm|mov)$", re.IGNORECASE)
_QUOTED_MEDIA = re.compile(
    r"""["']((?:https?:)?[^"'\s<>]{1,2000}?\.(?:m3u8|mpd|mp4|m4v|webm|mov)(?:\?[^"'\s<>]{0,500})?)["']""",
    re.IGNORECASE,
)
_JS_ASSIGN = re.compile(r"=\s*\{")
_NUMBER = re.compile(r"(\d+(?:\.\d+)?)\s*([kmg]?)(?:bps|b/s|bit)?", re.IGNORECASE)
_HEIGHT = re.compile(r"(\d{3,4})\s*p?\b", re.IGNORECASE)
_SRC_KEYS = ("src", "data-src", "data-lazy-src")
_QUERY_TYPES = {"mp4", "m4v", "webm", "mov", "m3u8", "mpd", "hls", "dash"}
_HEIGHT_KEYS = ("size", "res", "data-res", "data-quality", "label", "height", "data-height")
_MAX_SCRIPT = 1_000_000  # characters of one script read for JSON or media URLs
_MAX_NODES = 20_000  # JSON values walked per page
_MAX_MEDIA = 200


def _tag_id(name: str) -> int:
    return int(LexborHTMLParser("").create_node(name).tag_id)


_VIDEO_ID, _SCRIPT_ID, _META_ID = _tag_id("video"), _tag_id("script"), _tag_id("meta")
_IFRAME_ID, _SOURCE_ID, _LINK_ID = _tag_id("iframe"), _tag_id("source"), _tag_id("link")
_PLAYER_ADDRESS = re.compile(
    r"(^|[/.])(embed|player|videoembed)s?([/.?#_-]|$)|^https?://player\.", re.IGNORECASE
)
_SCRIPT_MARKERS = ("video", "m3u8", ".mpd", ".mp4", ".webm", "movie", "tvseries", "episode")


def nodes_have_video_markers(dropped: list[LexborNode], head: list[LexborNode]) -> bool:
    """Whether a page may be a video page, from the elements the HTML parser already set
    apart (see :func:`topicrawl.parse.html.parse_html`'s ``probe``): a ``<video>``, a video
    ``<meta>``, or a script naming media or a video type. Far cheaper than
    :func:`has_video_markers` (no scan of the whole page) and as complete for
    :func:`detect_video`, which reads nothing else."""
    for node in head:
        if node.tag_id == _LINK_ID:  # <link rel=preload as=video>
            attrs = node.attributes
            if (attrs.get("as") or "").strip().lower() == "video":
                return True
            continue
        if node.tag_id != _META_ID:
            continue
        attrs = node.attributes
        key = (attrs.get("property") or attrs.get("name") or "").strip().lower()
        if key.startswith(("og:video", "twitter:player")):
            return True
        if key in ("og:type", "twitter:card"):
            content = (attrs.get("content") or "").strip().lower()
            if content.startswith("video") or content == "player":
                return True
    for node in dropped:
        tag = node.tag_id
        if tag == _VIDEO_ID or (tag == _IFRAME_ID and _is_player_iframe(node) is not None):
            return True
        if tag == _SOURCE_ID:  # e.g. in a <video-js>; a <picture>'s or <audio>'s are not video
            attrs = node.attributes
            src = attrs.get("src") or attrs.get("data-src") or ""
            if src and media_type(src, attrs.get("type")) is not None:
                return True
        if tag == _SCRIPT_ID and node.attributes.get("src") is None:
            text = (node.text(deep=True) or "")[:_MAX_SCRIPT].lower()
            if any(marker in text for marker in _SCRIPT_MARKERS):
                return True
    return False


def _is_player_iframe(node: LexborNode) -> str | None:
    """The address of an iframe that holds a video player, else None."""
    attrs = node.attributes
    src = (attrs.get("src") or attrs.get("data-src") or "").strip()
    if not src or src.lower().startswith(("javascript:", "data:", "about:")):
        return None
    allow = (attrs.get("allow") or "").lower()
    if (
        "allowfullscreen" in attrs
        or "fullscreen" in allow
        or "autoplay" in allow
        or _PLAYER_ADDRESS.search(src.split("?", 1)[0])
    ):
        return src
    return None


def has_video_markers(html: str) -> bool:
    """Whether ``html`` holds anything that may mean video (cheap; no parse)."""
    lowered = html.lower()
    return any(marker in lowered for marker in MARKERS)


def media_type(url: str, declared: str | None = None) -> str | None:
    """The media type of ``url`` (``mp4``, ``webm``, ``mov``, ``hls``, ``dash``) or None.

    ``declared`` is a MIME type or a player's type word; an audio type is never media.
    """
    d = (declared or "").strip().lower()
    if d.startswith("audio/") or d in ("audio", "mp3", "aac"):
        return None
    if "mpegurl" in d or d in ("hls", "m3u8"):
        return "hls"
    if "dash" in d or d == "mpd":
        return "dash"
    if "webm" in d:
        return "webm"
    if "quicktime" in d:
        return "mov"
    if "mp4" in d:
        return "mp4"
    if d and not d.startswith("video/") and "/" in d:  # text/html, application/x-shockwave-flash
        return None
    match = _MEDIA_EXT.search(urlsplit(url).path)
    if match is None:
        return None
    ext = match.group(1).lower()
    return {"m3u8": "hls", "mpd": "dash", "m4v": "mp4"}.get(ext, ext)


def _int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 < value < 100_000 else None
    if isinstance(value, float):
        return int(value) if 0 < value < 100_000 else None
    if isinstance(value, dict):
        return _int(value.get("value"))
    if isinstance(value, str):
        match = _HEIGHT.search(value)
        return int(match.group(1)) if match else None
    return None


def parse_bitrate(value: object) -> int | None:
    """Bits per second from ``5000 kbps``, ``5 Mbps``, ``2800000`` (a bare number is bit/s)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value) if value > 0 else None
    if not isinstance(value, str):
        return None
    match = _NUMBER.search(value)
    if match is None:
        return None
    scale = {"": 1, "k": 1000, "m": 1_000_000, "g": 1_000_000_000}[match.group(2).lower()]
    return int(float(match.group(1)) * scale) or None


class _Found:
    """Candidates and signals collected over one page."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.media: dict[str, MediaUrl] = {}
        self.embeds: list[str] = []
        self.signals: list[str] = []
        self.about = False

    def absolute(self, ref: str) -> str | None:
        ref = ref.strip()
        if not ref or len(ref) > 4000:
            return None
        url = urljoin(self.base, ref)
        return url if urlsplit(url).scheme in ("http", "https") else None

    def add(self, ref: object, declared: str | None, source: str, **sizes: object) -> None:
        if isinstance(ref, list):  # e.g. a JSON-LD contentUrl with several URLs
            for item in ref[:_MAX_MEDIA]:
                self.add(item, declared, source, **sizes)
            return
        if not isinstance(ref, str) or len(self.media) >= _MAX_MEDIA:
            return
        url = self.absolute(ref)
        kind = media_type(url, declared) if url else None
        if url is None or kind is None:
            return
        width, height = _int(sizes.get("width")), _int(sizes.get("height"))
        bitrate = parse_bitrate(sizes.get("bitrate"))
        old = self.media.get(url)
        if old is not None:  # the same URL seen twice: keep what either says
            width, height = old.width or width, old.height or height
            bitrate = old.bitrate or bitrate
            source = old.source
        self.media[url] = MediaUrl(url, kind, width, height, bitrate, source)

    def embed(self, ref: object) -> None:
        if isinstance(ref, str) and (url := self.absolute(ref)) is not None:
            self.embeds.append(url)


def detect_video(html: str, url: str, *, prefilter: bool = True) -> VideoPage:
    """The video verdict and candidate media of one HTML page (see the module docstring).

    ``prefilter=False`` skips the substring check (the caller's parse already saw markers).
    """
    if prefilter and not has_video_markers(html):
        return VideoPage(url, "none")
    tree = LexborHTMLParser(html)
    base_node = tree.css_first("base[href]")
    base = urljoin(url, base_node.attributes.get("href") or "") if base_node else url
    found = _Found(base)
    _meta(tree, found)
    _videos(tree, found)
    for iframe in tree.css("iframe"):
        src = _is_player_iframe(iframe)
        if src is not None:
            found.signals.append("iframe-player")
            found.about = True
            found.embed(src)
    for script in tree.css("script"):
        if script.attributes.get("src") is not None:
            continue
        text = (script.text(deep=True) or "")[:_MAX_SCRIPT]
        kind = (script.attributes.get("type") or "").strip().lower()
        if kind == "application/ld+json":
            _json_ld(text, found)
        elif kind in (
            "",
            "text/javascript",
            "application/javascript",
            "application/json",
            "module",
        ):
            _config(text, found)
    media = tuple(found.media.values())
    video_class = "play" if media else "video" if found.about else "none"
    manifests = tuple(m.url for m in media if m.type in ("hls", "dash"))
    embeds = tuple(dict.fromkeys(found.embeds))
    signals = tuple(dict.fromkeys(found.signals))  # one of each: a page may hold 10,000 <video>
    return VideoPage(url, video_class, media, manifests, embeds, signals, found.about)


def _meta(tree: LexborHTMLParser, found: _Found) -> None:
    metas: dict[str, str] = {}
    for node in tree.css("meta"):
        key = node.attributes.get("property") or node.attributes.get("name") or ""
        content = node.attributes.get("content")
        if key and content is not None:
            metas.setdefault(key.strip().lower(), content.strip())
    if metas.get("og:type", "").lower().startswith("video"):
        found.about = True
        found.signals.append("og:type")
    for key in ("og:video", "og:video:url", "og:video:secure_url"):
        if key in metas:
            found.signals.append(key)
            declared = metas.get("og:video:type")
            if declared and media_type(metas[key], declared) is None:
                found.embed(metas[key])
                found.about = True
                continue
            found.add(
                metas[key],
                declared,
                "og",
                width=metas.get("og:video:width"),
                height=metas.get("og:video:height"),
            )
    if metas.get("twitter:card", "").lower() == "player":
        found.about = True
    if "twitter:player" in metas:
        found.signals.append("twitter:player")
        found.embed(metas["twitter:player"])
    if "twitter:player:stream" in metas:
        found.signals.append("twitter:player:stream")
        declared = metas.get("twitter:player:stream:content_type")
        found.add(metas["twitter:player:stream"], declared, "twitter")


def _query_type(url: str) -> str | None:
    """A media type named only in ``url``'s query (``?format=mp4``, ``&type=video/mp4``)."""
    for _, value in parse_qsl(urlsplit(url).query):
        v = value.strip().lower()
        if v in _QUERY_TYPES or v.startswith("video/") or "mpegurl" in v:
            return v
    return None


def _videos(tree: LexborHTMLParser, found: _Found) -> None:
    # ``<video-js>`` is video.js's own element, used like ``<video>``
    for video in tree.css("video, video-js"):
        attrs = video.attributes
        if "muted" in attrs and "controls" not in attrs:
            found.signals.append("decorative-video")
            continue
        nodes: list[LexborNode] = [video, *video.css("source")]
        refs = video_refs = 0
        for node in nodes:
            # lazy players keep the URL in data-src until the element scrolls into view
            src = next((node.attributes.get(k) for k in _SRC_KEYS if node.attributes.get(k)), None)
            declared = node.attributes.get("type")
            if not src:  # a player script's own data attribute (data-hls, data-video-url...)
                src = next(
                    (
                        v
                        for k, v in node.attributes.items()
                        if k.startswith("data-") and v and media_type(v.strip()) is not None
                    ),
                    None,
                )
            if not src:
                continue
            refs += 1
            if not declared and media_type(urljoin(found.base, src)) is None:
                declared = _query_type(src)
            video_refs += media_type(src, declared) is not None
            height = next(
                (node.attributes.get(k) for k in _HEIGHT_KEYS if node.attributes.get(k)), None
            )
            found.add(src, declared, "video", height=height)
        if refs and not video_refs:  # e.g. an MP3 played through <video>
            found.signals.append("video:no-video-source")
            continue
        if not refs and "controls" not in attrs:  # a poster frame (e.g. a podcast's cover)
            found.signals.append("video:empty")
            continue
        found.signals.append("video")
        found.about = True
    for link in tree.css("link[href]"):
        attrs = link.attributes
        rel = (attrs.get("rel") or "").lower().split()
        if "preload" in rel and (attrs.get("as") or "").strip().lower() == "video":
            found.signals.append("preload-video")
            found.add(attrs.get("href") or "", attrs.get("type"), "preload")


def _walk(
    value: object, budget: list[int], in_list: bool = False
) -> Iterator[tuple[dict[str, object], bool]]:
    """Every JSON object under ``value`` with whether it sits in an ``ItemList``."""
    stack: list[tuple[object, bool]] = [(value, in_list)]
    while stack and budget[0] > 0:
        item, listed = stack.pop()
        budget[0] -= 1
        if isinstance(item, list):
            stack.extend((x, listed) for x in reversed(item))  # popped in document order
        elif isinstance(item, dict):
            yield item, listed
            types = _types(item)
            inner = listed or "itemlist" in types
            values = [x for x in item.values() if isinstance(x, dict | list)]
            stack.extend((x, inner) for x in reversed(values))


def _types(obj: dict[str, object]) -> set[str]:
    kind = obj.get("@type")
    kinds = kind if isinstance(kind, list) else [kind]
    return {k.lower().rsplit("/", 1)[-1] for k in kinds if isinstance(k, str)}


def _loads(text: str) -> object | None:
    try:
        data: object = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return data


def _json_ld(text: str, found: _Found) -> None:
    data = _loads(text.strip())
    if data is None:
        return
    budget = [_MAX_NODES]
    for obj, listed in _walk(data, budget):
        types = _types(obj)
        if listed or not types & _ABOUT_TYPES:
            continue
        found.about = True
        found.signals.append("jsonld:" + "/".join(sorted(types)))
        if "videoobject" in types:
            encoding = obj.get("encodingFormat")
            found.add(
                obj.get("contentUrl"),
                encoding if isinstance(encoding, str) else None,
                "jsonld",
                width=obj.get("width"),
                height=obj.get("height") or obj.get("videoQuality"),
                bitrate=obj.get("bitrate"),
            )
            found.embed(obj.get("embedUrl"))


_URL_KEYS = ("file", "src", "url", "source", "hls", "dash", "mp4", "stream", "manifest")
_TYPE_KEYS = ("type", "mime", "mimeType", "mime_type", "contentType")


def _config(text: str, found: _Found) -> None:
    """Media URLs in a player config: a JSON object if one parses, else quoted URLs."""
    stripped = text.strip()
    if not stripped or not _QUOTED_MEDIA.search(stripped):
        return
    data = _loads(stripped) if stripped[0] in "{[" else None
    if data is None and (match := _JS_ASSIGN.search(stripped)) is not None:
        # ``x = {...};``: one try, from the first assigned object to the last brace (linear;
        # a regex with ``.*`` backtracks once per ``=`` of a hostile script)
        end = stripped.rfind("}")
        if end > match.end():
            data = _loads(stripped[match.end() - 1 : end + 1])
    if data is None:
        found.signals.append("config:urls")
        for match in _QUOTED_MEDIA.finditer(stripped):
            ref = match.group(1).replace("\\/", "/")
            # a bare file name in a script is an example or a label more often than a source
            if "/" in ref:
                found.add(ref, None, "config")
        return
    budget = [_MAX_NODES]
    for obj, _ in _walk(data, budget):
        if obj.get("audioOnly") is True or str(obj.get("kind", "")).lower() == "audio":
            found.signals.append("config:audio")
            return
    found.signals.append("config")
    budget = [_MAX_NODES]
    for obj, _ in _walk(data, budget):
        kind = next((obj[k] for k in _TYPE_KEYS if isinstance(obj.get(k), str)), None)
        declared = kind if isinstance(kind, str) else None
        # any key whose value is a media file's address (``href``, ``uri``, ``videoUrl``...),
        # as the quoted-URL reading of a script that is not JSON would find it
        for key, value in obj.items():
            if key in _URL_KEYS or not isinstance(value, str) or "/" not in value:
                continue
            if _MEDIA_EXT.search(urlsplit(value.strip()).path):
                found.add(
                    value,
                    declared,
                    "config",
                    width=obj.get("width"),
                    height=obj.get("height") or obj.get("label") or obj.get("res"),
                    bitrate=obj.get("bitrate"),
                )
        for key in _URL_KEYS:
            if isinstance(obj.get(key), str):
                found.add(
                    obj[key],
                    declared if key in ("file", "src", "url", "source") else key,
                    "config",
                    width=obj.get("width"),
                    height=obj.get("height") or obj.get("label") or obj.get("res"),
                    bitrate=obj.get("bitrate"),
                )
