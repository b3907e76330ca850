"""HLS and DASH manifests from bytes: renditions listed, hostile manifests refused clearly."""

from __future__ import annotations

import asyncio
import socket

import pytest

from topicrawl.parse.video import (
    GenericResolver,
    ManifestError,
    parse_dash,
    parse_hls,
    parse_manifest,
)

HLS_URL = "http://site.test/hls/1/master.m3u8"
MPD_URL = "http://site.test/dash/1/manifest.mpd"
MASTER = b"""#EXTM3U
#EXT-X-VERSION:4
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="en",URI="audio/index.m3u8"
#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=90000,RESOLUTION=640x360,URI="iframe.m3u8"
#EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=640x360,CODECS="avc1.4d401f,mp4a.40.2",AUDIO="a"
360p/index.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=2800000,RESOLUTION=1280x720
https://cdn.test/720p/index.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=64000,CODECS="mp4a.40.2"
audio-only/index.m3u8
"""
MPD = b"""<?xml version="1.0"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static">
  <BaseURL>media/</BaseURL>
  <Period>
    <AdaptationSet mimeType="video/mp4">
      <Representation id="1" bandwidth="2800000" width="1280" height="720">
        <BaseURL>720.mp4</BaseURL>
      </Representation>
      <Representation id="2" bandwidth="900000" width="640" height="360">
        <SegmentTemplate media="s$Number$.m4s"/>
      </Representation>
    </AdaptationSet>
    <AdaptationSet contentType="audio" mimeType="audio/mp4">
      <Representation id="3" bandwidth="128000"><BaseURL>a.m4a</BaseURL></Representation>
    </AdaptationSet>
  </Period>
</MPD>
"""


def test_hls_master_lists_video_variants_only() -> None:
    manifest = parse_hls(MASTER, HLS_URL)
    assert manifest.has_video
    assert [(m.url, m.width, m.height, m.bitrate) for m in manifest.renditions] == [
        ("http://site.test/hls/1/360p/index.m3u8", 640, 360, 800_000),
        ("https://cdn.test/720p/index.m3u8", 1280, 720, 2_800_000),
    ]


def test_hls_media_playlists_video_and_audio() -> None:
    video = b"#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\ns0.ts\n#EXT-X-ENDLIST\n"
    audio = b"#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\ns0.aac\n#EXT-X-ENDLIST\n"
    assert parse_hls(video, HLS_URL).has_video
    assert not parse_hls(audio, HLS_URL).has_video
    only_audio = b'#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,CODECS="mp4a.40.2"\na.m3u8\n'
    assert not parse_hls(only_audio, HLS_URL).has_video


def test_dash_lists_video_representations_with_base_urls() -> None:
    manifest = parse_dash(MPD, MPD_URL)
    assert manifest.has_video
    assert [(m.url, m.type, m.height, m.bitrate) for m in manifest.renditions] == [
        ("http://site.test/dash/1/media/720.mp4", "mp4", 720, 2_800_000),
        ("http://site.test/dash/1/media/s1.m4s", "mp4", 360, 900_000),  # first segment
    ]


def test_dash_segment_templates_list_each_representation_by_its_first_segment() -> None:
    body = b"""<?xml version="1.0"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static">
  <Period>
    <SegmentTemplate media="p-$RepresentationID$-$Number$.m4s" startNumber="7"/>
    <AdaptationSet mimeType="video/mp4">
      <SegmentTemplate initialization="init/$RepresentationID$_$Bandwidth$.mp4"
        media="$RepresentationID$/$Number%05d$.m4s"/>
      <Representation id="v1080" bandwidth="5000000" height="1080"/>
      <Representation id="v480" bandwidth="1200000" height="480">
        <SegmentTemplate media="t/$Time$-$$-$Number%03d$.m4s" startNumber="3">
          <SegmentTimeline><S t="9000" d="6000" r="4"/></SegmentTimeline>
        </SegmentTemplate>
      </Representation>
    </AdaptationSet>
    <AdaptationSet mimeType="video/webm">
      <Representation id="w" bandwidth="800000" height="360"/>
      <Representation bandwidth="1" height="2">
        <SegmentTemplate media="$Nope$.m4s"/></Representation>
    </AdaptationSet>
  </Period>
</MPD>"""
    manifest = parse_dash(body, MPD_URL)
    assert [(m.url, m.type, m.height) for m in manifest.renditions] == [
        ("http://site.test/dash/1/init/v1080_5000000.mp4", "mp4", 1080),
        ("http://site.test/dash/1/t/9000-$-003.m4s", "mp4", 480),
        ("http://site.test/dash/1/p-w-7.m4s", "webm", 360),
        ("http://site.test/dash/1/$Nope$.m4s", "webm", 2),
    ]
    empty_id = body.replace(b'<Representation id="w" ', b"<Representation ")
    listed = [m.url for m in parse_dash(empty_id, MPD_URL).renditions]
    assert "http://site.test/dash/1/p--7.m4s" not in listed  # no id: nothing made up


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not a playlist", "no #EXTM3U"),
        (b"#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=abc\nx.m3u8\n", "malformed"),
        (b"\xff\xfe#EXTM3U", "not UTF-8"),
        (b"#EXTM3U\n" + b"#EXTINF:1,\ns.ts\n" * 200_000, "exceeds"),
    ],
)
def test_hostile_hls(body: bytes, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        parse_hls(body, HLS_URL)


def test_too_many_hls_variants() -> None:
    body = b"#EXTM3U\n" + b"#EXT-X-STREAM-INF:BANDWIDTH=1,RESOLUTION=2x2\nv.m3u8\n" * 300
    with pytest.raises(ManifestError, match="variants exceed"):
        parse_hls(body, HLS_URL)


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE MPD [
 <!ENTITY a "aaaaaaaaaa">
 <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
 <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
]>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011"><BaseURL>&c;</BaseURL></MPD>"""
EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE MPD [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011"><BaseURL>&x;</BaseURL></MPD>"""


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (BILLION_LAUGHS, "DTD"),
        (EXTERNAL_ENTITY, "DTD"),
        (b"<MPD><Period>", "malformed"),
        (b"<html><body>hi</body></html>", "not a DASH MPD"),
        (b"<MPD>" + b" " * 3_000_000 + b"</MPD>", "exceeds"),
        (b"<MPD>" + b"<Period>" * 300 + b"</Period>" * 300 + b"</MPD>", "Excessive depth"),
    ],
)
def test_hostile_dash(body: bytes, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        parse_dash(body, MPD_URL)


def test_too_many_dash_representations() -> None:
    reps = (
        b'<Representation height="2" bandwidth="1"><BaseURL>x.mp4</BaseURL></Representation>' * 300
    )
    body = (
        b'<MPD><Period><AdaptationSet mimeType="video/mp4">'
        + reps
        + b"</AdaptationSet></Period></MPD>"
    )
    with pytest.raises(ManifestError, match="more than"):
        parse_dash(body, MPD_URL)


def test_unknown_manifest_kind() -> None:
    with pytest.raises(ManifestError, match="unknown manifest type"):
        parse_manifest("smooth", b"", HLS_URL)


def test_no_library_opens_a_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a manifest parser tried to open a connection")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    parse_hls(MASTER, HLS_URL)
    parse_dash(MPD, MPD_URL)
    with pytest.raises(ManifestError):
        parse_dash(EXTERNAL_ENTITY, MPD_URL)
    remote_dtd = b'<?xml version="1.0"?><!DOCTYPE MPD SYSTEM "http://evil.test/x.dtd"><MPD/>'
    with pytest.raises(ManifestError):
        parse_dash(remote_dtd, MPD_URL)


def test_generic_resolver_expands_manifests_and_drops_audio_only() -> None:
    html = (
        "<html><body><video controls><source src='/hls/1/master.m3u8' "
        "type='application/x-mpegURL'></video>"
        '<script type=\'application/json\'>{"sources": [{"file": "/hls/pod/master.m3u8"}]}'
        "</script></body></html>"
    )
    audio = b'#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,CODECS="mp4a.40.2"\na.m3u8\n'
    bodies = {HLS_URL: MASTER, "http://site.test/hls/pod/master.m3u8": audio}
    asked: list[str] = []

    async def fetch(url: str) -> bytes:
        asked.append(url)
        return bodies[url]

    result = asyncio.run(GenericResolver().resolve("http://site.test/p.html", html, fetch=fetch))
    assert result.video_class == "play"
    assert sorted(asked) == sorted(bodies)
    assert {m.url for m in result.media} == {
        HLS_URL,
        "http://site.test/hls/1/360p/index.m3u8",
        "https://cdn.test/720p/index.m3u8",
    }


def test_generic_resolver_keeps_going_when_a_manifest_fails() -> None:
    html = "<video controls src='/hls/1/master.m3u8'></video>"

    async def fetch(url: str) -> bytes:
        raise OSError("connection refused")

    result = asyncio.run(GenericResolver().resolve("http://site.test/p.html", html, fetch=fetch))
    assert result.video_class == "play"
    assert [m.url for m in result.media] == [HLS_URL]
    assert "connection refused" in result.errors[0]

    async def hostile(url: str) -> bytes:
        return BILLION_LAUGHS

    html = "<video controls src='/dash/1/manifest.mpd'></video>"
    result = asyncio.run(GenericResolver().resolve("http://site.test/p.html", html, fetch=hostile))
    assert "DTD" in result.errors[0]


def test_hls_video_renditions_of_ext_x_media_are_listed() -> None:
    master = b"""#EXTM3U
#EXT-X-MEDIA:TYPE=VIDEO,GROUP-ID="v",NAME="main",DEFAULT=YES,URI="v/main.m3u8"
#EXT-X-MEDIA:TYPE=VIDEO,GROUP-ID="v",NAME="side",DEFAULT=NO,URI="v/side.m3u8"
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="en",URI="a/en.m3u8"
#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="s",NAME="en",URI="s/en.m3u8"
#EXT-X-STREAM-INF:BANDWIDTH=2800000,RESOLUTION=1280x720,VIDEO="v",AUDIO="a"
v/main.m3u8
"""
    manifest = parse_hls(master, HLS_URL)
    assert [(r.url, r.height) for r in manifest.renditions] == [
        ("http://site.test/hls/1/v/main.m3u8", 720),
        ("http://site.test/hls/1/v/side.m3u8", None),
    ]
