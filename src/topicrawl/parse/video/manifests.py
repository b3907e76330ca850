"""HLS and DASH manifests parsed from bytes already fetched: never by a library's own fetch.

HLS goes through ``m3u8.loads`` (a string in, nothing fetched); DASH through lxml with
``resolve_entities=False``, ``no_network=True``, ``load_dtd=False`` and no huge trees, and a
manifest that declares a DTD (``<!DOCTYPE``/``<!ENTITY``: the entity-expansion and external-
entity tricks) is refused outright. Both are capped in bytes and renditions. Every failure is
a :class:`~topicrawl.parse.video.model.ManifestError` saying what was wrong.

What is listed: a master playlist's video variants (RESOLUTION, BANDWIDTH) and its
``#EXT-X-MEDIA:TYPE=VIDEO`` renditions that have a URI (alternative video playlists, e.g.
camera angles; session 20), never its audio-only variants, I-frame playlists or audio and
subtitle EXT-X-MEDIA renditions; a media playlist is itself the
media (audio-only when its segments are audio files); a DASH MPD's video Representations:
one that names a single file by ``BaseURL`` is that file; one whose segments come from a
``SegmentTemplate`` (on the Representation, its AdaptationSet or its Period, the nearest
winning) is listed by its initialization segment, or by its first media segment when there is
none (``$RepresentationID$``, ``$Bandwidth$``, ``$Number$`` from ``startNumber``, ``$Time$``
from the first ``SegmentTimeline`` entry, width formats such as ``$Number%05d$``, ``$$``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urljoin

import m3u8
from lxml import etree

from topicrawl.parse.video.model import ManifestError, MediaUrl

__all__ = ["MAX_MANIFEST_BYTES", "Manifest", "parse_dash", "parse_hls", "parse_manifest"]

MAX_MANIFEST_BYTES = 2_000_000
MAX_RENDITIONS = 256
_AUDIO_CODECS = re.compile(r"^(mp4a|ac-3|ec-3|ac-4|opus|flac|mp3|vorbis|alac|dtsc|dtse)", re.I)
_AUDIO_SEGMENT = re.compile(r"\.(aac|mp3|m4a|ac3|ec3|opus|flac)(\?|$)", re.I)
_DTD = re.compile(rb"<!(DOCTYPE|ENTITY)", re.I)


@dataclass(frozen=True, slots=True)
class Manifest:
    """A parsed manifest: its video renditions and whether it carries any video at all."""

    url: str
    type: str  # hls | dash
    renditions: tuple[MediaUrl, ...]
    has_video: bool


def _text(body: bytes, url: str, max_bytes: int) -> str:
    if len(body) > max_bytes:
        raise ManifestError(f"{url}: manifest of {len(body):,} bytes exceeds {max_bytes:,}")
    try:
        return body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ManifestError(f"{url}: manifest is not UTF-8 ({exc.reason})") from exc


def _is_audio_only(codecs: str | None, resolution: object) -> bool:
    if resolution or not codecs:
        return False
    return all(_AUDIO_CODECS.match(c.strip()) for c in codecs.split(",") if c.strip())


def parse_hls(body: bytes, url: str, *, max_bytes: int = MAX_MANIFEST_BYTES) -> Manifest:
    """The video variants of an HLS playlist's bytes (``url`` is where they came from).

    Raises:
        ManifestError: too large, not UTF-8, not an M3U8 playlist, malformed, or too many
            variants.
    """
    text = _text(body, url, max_bytes)
    if not text.lstrip().startswith("#EXTM3U"):
        raise ManifestError(f"{url}: not an HLS playlist (no #EXTM3U header)")
    try:
        playlist = m3u8.loads(text, uri=url)
        variants = list(playlist.playlists)
        video_media = [m.uri for m in playlist.media if (m.type or "").upper() == "VIDEO"]
        segments = [s.uri or "" for s in playlist.segments]
    except Exception as exc:  # m3u8 raises ValueError, IndexError, KeyError... on bad input
        raise ManifestError(f"{url}: malformed HLS playlist ({type(exc).__name__}: {exc})") from exc
    if len(variants) + len(video_media) > MAX_RENDITIONS:
        raise ManifestError(f"{url}: {len(variants)} variants exceed {MAX_RENDITIONS}")
    if not playlist.is_variant:
        audio = bool(segments) and all(_AUDIO_SEGMENT.search(s) for s in segments)
        return Manifest(url, "hls", (), has_video=not audio)
    renditions = []
    for variant in variants:
        info = variant.stream_info
        if not variant.uri or _is_audio_only(info.codecs, info.resolution):
            continue
        width, height = info.resolution if info.resolution else (None, None)
        renditions.append(
            MediaUrl(
                urljoin(url, variant.uri.strip()),
                "hls",
                int(width) if width else None,
                int(height) if height else None,
                int(info.bandwidth) if info.bandwidth else None,
                "hls",
            )
        )
    seen = {r.url for r in renditions}
    for uri in video_media:  # alternative video renditions: their sizes are not stated
        if uri and uri.strip() and (full := urljoin(url, uri.strip())) not in seen:
            seen.add(full)
            renditions.append(MediaUrl(full, "hls", None, None, None, "hls"))
    return Manifest(url, "hls", tuple(dict.fromkeys(renditions)), has_video=bool(renditions))


def _local(tag: object) -> str:
    return etree.QName(tag).localname if isinstance(tag, str) else ""


def _child(node: etree._Element, name: str) -> etree._Element | None:
    return next((c for c in node if _local(c.tag) == name), None)


def _base(node: etree._Element, base: str) -> str:
    child = _child(node, "BaseURL")
    if child is not None and child.text and child.text.strip():
        return urljoin(base, child.text.strip())
    return base


def parse_dash(body: bytes, url: str, *, max_bytes: int = MAX_MANIFEST_BYTES) -> Manifest:
    """The video Representations of a DASH MPD's bytes (``url`` is where they came from).

    Raises:
        ManifestError: too large, declares a DTD or entities, not well-formed XML, not an MPD,
            or too many representations.
    """
    if len(body) > max_bytes:
        raise ManifestError(f"{url}: manifest of {len(body):,} bytes exceeds {max_bytes:,}")
    if _DTD.search(body):
        raise ManifestError(f"{url}: MPD declares a DTD or entities (refused)")
    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, recover=False
    )
    try:
        root = etree.fromstring(body, parser)
    except (etree.XMLSyntaxError, ValueError) as exc:
        raise ManifestError(f"{url}: malformed MPD ({exc})") from exc
    if _local(root.tag) != "MPD":
        raise ManifestError(f"{url}: not a DASH MPD (root element {_local(root.tag)!r})")
    renditions: list[MediaUrl] = []
    has_video = False
    count = 0
    mpd_base = _base(root, url)
    for period in (c for c in root if _local(c.tag) == "Period"):
        period_base = _base(period, mpd_base)
        for aset in (c for c in period if _local(c.tag) == "AdaptationSet"):
            set_base = _base(aset, period_base)
            for rep in (c for c in aset if _local(c.tag) == "Representation"):
                count += 1
                if count > MAX_RENDITIONS:
                    raise ManifestError(f"{url}: more than {MAX_RENDITIONS} representations")
                if not _is_video(aset, rep):
                    continue
                has_video = True
                target = _base(rep, set_base)
                if _child(rep, "BaseURL") is None:
                    template = next(
                        (
                            t
                            for t in (_child(n, "SegmentTemplate") for n in (rep, aset, period))
                            if t is not None
                        ),
                        None,
                    )
                    first = _first_segment(template, rep) if template is not None else None
                    if first is None:
                        continue  # neither a file nor a template: nothing to list
                    target = urljoin(target, first)
                renditions.append(
                    MediaUrl(
                        target,
                        "mp4" if "webm" not in _attr(aset, rep, "mimeType") else "webm",
                        _num(rep.get("width") or aset.get("width")),
                        _num(rep.get("height") or aset.get("height")),
                        _num(rep.get("bandwidth")),
                        "dash",
                    )
                )
    return Manifest(url, "dash", tuple(dict.fromkeys(renditions)), has_video=has_video)


_IDENTIFIER = re.compile(r"\$(RepresentationID|Bandwidth|Number|Time)(%0(\d{1,2})d)?\$|\$\$")


def _first_segment(template: etree._Element, rep: etree._Element) -> str | None:
    """The initialization segment of ``rep`` by ``template``, else its first media segment;
    None when the template names neither (or names an identifier it cannot fill)."""
    timeline = _child(template, "SegmentTimeline")
    first = _child(timeline, "S") if timeline is not None else None
    values = {
        "RepresentationID": rep.get("id") or "",
        "Bandwidth": rep.get("bandwidth") or "",
        "Number": (template.get("startNumber") or "1").strip(),
        "Time": (first.get("t") if first is not None else None) or "0",
    }
    for name in ("initialization", "media"):
        pattern = template.get(name)
        if not pattern:
            continue
        try:
            return _IDENTIFIER.sub(lambda m: _fill(m, values), pattern.strip())
        except ValueError:
            return None
    return None


def _fill(match: re.Match[str], values: dict[str, str]) -> str:
    if match.group(0) == "$$":
        return "$"
    value = values[match.group(1)]
    if not value:
        raise ValueError(f"no value for ${match.group(1)}$")
    if match.group(3):
        return value.rjust(int(match.group(3)), "0") if value.isdigit() else value
    return value


def _attr(aset: etree._Element, rep: etree._Element, name: str) -> str:
    return (rep.get(name) or aset.get(name) or "").lower()


def _is_video(aset: etree._Element, rep: etree._Element) -> bool:
    content = (aset.get("contentType") or "").lower()
    mime = _attr(aset, rep, "mimeType")
    if content:
        return content == "video"
    if mime:
        return mime.startswith("video/")
    codecs = _attr(aset, rep, "codecs")
    return bool(rep.get("height") or aset.get("height")) or (
        bool(codecs) and not _is_audio_only(codecs, None)
    )


def _num(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        number = int(value.strip())
    except ValueError:
        return None
    return number if number > 0 else None


def parse_manifest(
    kind: str, body: bytes, url: str, *, max_bytes: int = MAX_MANIFEST_BYTES
) -> Manifest:
    """:func:`parse_hls` or :func:`parse_dash` by ``kind`` (``hls`` or ``dash``)."""
    if kind == "hls":
        return parse_hls(body, url, max_bytes=max_bytes)
    if kind == "dash":
        return parse_dash(body, url, max_bytes=max_bytes)
    raise ManifestError(f"{url}: unknown manifest type {kind!r}")
