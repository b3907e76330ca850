"""The first host's "lab": redirects, errors, traps, odd encodings, huge bodies and files."""

from __future__ import annotations

import io
import json
import random
import struct
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from topicrawl.demoweb.graph import normalise_path
from topicrawl.demoweb.model import DemoHost, DemoLink, DemoPage, HrefStyle, Kind
from topicrawl.demoweb.text import TextGenerator, topic_by_id

if TYPE_CHECKING:
    from topicrawl.demoweb.generate import Article

__all__ = ["LONG_QUERY_LENGTH", "lab_pages"]

LONG_QUERY_LENGTH = 4000
IRI_PATH = "/lab/天文.html"


def lab_pages(
    *,
    host: DemoHost,
    nav: Sequence[DemoLink],
    footer: Sequence[DemoLink],
    articles: Sequence[Article],
    other_home: str,
    dead_host: str,
    writer: TextGenerator,
    rng: random.Random,
    huge_bytes: int,
    bomb_bytes: int,
) -> list[DemoPage]:
    """Every lab resource, and ``/lab/`` linking to each of them."""
    addr = host.address

    def link(
        target: str,
        anchor: str,
        *,
        style: HrefStyle = HrefStyle.ROOT,
        query: str = "",
        fragment: str = "",
    ) -> DemoLink:
        return DemoLink(
            host=addr,
            target=target,
            anchor=anchor,
            block="lab",
            style=style,
            query=query,
            fragment=fragment,
        )

    def doc(
        path: str,
        kind: Kind,
        topic: str,
        lang: str,
        *,
        links: Sequence[DemoLink] = (),
        encoding: str = "utf-8",
        header_charset: str | None = "utf-8",
        meta_charset: str | None = "utf-8",
        noindex: bool = False,
        size: int = 0,
    ) -> DemoPage:
        subject = topic_by_id(topic)
        return DemoPage(
            host=addr,
            path=path,
            kind=kind,
            title=writer.title(subject, lang),
            lang=lang,
            true_topic=topic,
            paragraphs=writer.paragraphs(subject, lang, rng.randint(2, 4)),
            links=(*nav, *links, *footer),
            encoding=encoding,
            header_charset=header_charset,
            meta_charset=meta_charset,
            noindex=noindex,
            nofollow=noindex,
            size=size,
        )

    def moved(path: str, status: int, to_host: str, target: str, style: HrefStyle) -> DemoPage:
        location = DemoLink(host=to_host, target=target, anchor="", block="redirect", style=style)
        return DemoPage(host=addr, path=path, kind=Kind.REDIRECT, status=status, redirect=location)

    def article(n: int) -> str:
        return articles[n % len(articles)].path

    long_query = "q=" + "+".join(rng.choice(("telescope", "recipe", "goal")) for _ in range(600))
    long_query = long_query[:LONG_QUERY_LENGTH]
    results = [
        DemoLink(host=addr, target=article(n), anchor="result", block="results") for n in range(5)
    ]
    target_only = link("/lab/meta-nofollow-target.html", "Only linked from a noindex,nofollow page")
    index_links = [
        link("/lab/redirect-301", "Old address (moved permanently)"),
        link("/lab/redirect-302", "Temporary address"),
        link("/lab/redirect-chain", "An article that moved twice"),
        link("/lab/loop-a", "Endless redirect"),
        link("/lab/redirect-away", "Moved to a partner site"),
        link("/lab/error-500", "Broken script"),
        link("/lab/flaky.html", "Sometimes unavailable"),
        link("/lab/slow.html", "Slow page", fragment="top"),
        link("/lab/huge.html", "Very long page"),
        link("/lab/bomb.html", "Compressed page"),
        link("/lab/broken.html", "Badly written page", style=HrefStyle.RELATIVE),
        link("/lab/gbk-utf8-header.html", "GBK page labelled UTF-8"),
        link("/lab/gbk-no-charset.html", "GBK page without charset"),
        link("/lab/utf8-as-latin1.html", "UTF-8 page labelled ISO-8859-1"),
        link("/lab/noindex.html", "Hidden page"),
        link(IRI_PATH, "天文专题"),
        link("/archive" + article(0), "Archived copy"),
        link("/search", "Saved search", query=long_query),
        link("/files/report.pdf", "Annual report (PDF)"),
        link("/files/chart.png", "Chart"),
        link("/files/archive.zip", "Download archive"),
        link("/api/stats.json", "Statistics (JSON)"),
        link("/files/download", "Download", query="id=7"),
        link("/lab/gone.html", "Removed page"),
        DemoLink(host=dead_host, target="/", anchor="Mirror (offline)", block="lab"),
        link("/calendar/2024/01", "Events calendar", style=HrefStyle.DOTDOT),
    ]
    files = (
        ("/files/report.pdf", "application/pdf", _pdf()),
        ("/files/chart.png", "image/png", _png()),
        ("/files/archive.zip", "application/zip", _zip()),
        ("/api/stats.json", "application/json", _json(host, len(articles))),
        ("/files/download", "application/octet-stream", bytes(range(256)) * 4),
    )
    return [
        DemoPage(
            host=addr,
            path="/lab/",
            kind=Kind.LAB,
            title="Site lab",
            lang="en",
            paragraphs=(("Odd corners of this site, kept for testing crawlers.",),),
            links=(*nav, *index_links, *footer),
        ),
        moved("/lab/redirect-301", 301, addr, article(1), HrefStyle.ABSOLUTE),
        moved("/lab/redirect-302", 302, addr, article(2), HrefStyle.ROOT),
        moved("/lab/redirect-chain", 301, addr, "/lab/redirect-chain-2", HrefStyle.ROOT),
        moved("/lab/redirect-chain-2", 302, addr, article(3), HrefStyle.ABSOLUTE),
        moved("/lab/loop-a", 302, addr, "/lab/loop-b", HrefStyle.ROOT),
        moved("/lab/loop-b", 302, addr, "/lab/loop-a", HrefStyle.RELATIVE),
        moved("/lab/redirect-away", 301, other_home, "/", HrefStyle.ABSOLUTE),
        DemoPage(host=addr, path="/lab/error-500", kind=Kind.ERROR, status=500),
        doc("/lab/flaky.html", Kind.FLAKY, "finance", "en"),
        doc("/lab/slow.html", Kind.SLOW, "gardening", "en"),
        # Only the head and menu of the huge page are ever sent, so it links only to the menu.
        replace(
            doc("/lab/huge.html", Kind.HUGE, "astronomy", "en", size=huge_bytes), links=tuple(nav)
        ),
        DemoPage(host=addr, path="/lab/bomb.html", kind=Kind.BOMB, size=bomb_bytes),
        doc("/lab/broken.html", Kind.BROKEN, "cooking", "en", links=results[:2]),
        doc(
            "/lab/gbk-utf8-header.html",
            Kind.LAB,
            "cooking",
            "zh",
            encoding="gbk",
            meta_charset=None,
        ),
        doc(
            "/lab/gbk-no-charset.html",
            Kind.LAB,
            "finance",
            "zh",
            encoding="gbk",
            header_charset=None,
            meta_charset=None,
        ),
        doc(
            "/lab/utf8-as-latin1.html",
            Kind.LAB,
            "gardening",
            "zh",
            header_charset=None,
            meta_charset="iso-8859-1",
        ),
        doc("/lab/noindex.html", Kind.LAB, "football", "en", noindex=True, links=[target_only]),
        doc("/lab/meta-nofollow-target.html", Kind.LAB, "football", "en"),
        doc(normalise_path(IRI_PATH), Kind.LAB, "astronomy", "zh"),
        DemoPage(
            host=addr,
            path="/search",
            kind=Kind.LAB,
            title="Search results",
            lang="en",
            paragraphs=(("Five results for your saved search.",),),
            links=(*nav, *results, *footer),
        ),
        *(
            DemoPage(host=addr, path=path, kind=Kind.FILE, content_type=ctype, body=body)
            for path, ctype, body in files
        ),
    ]


def _pdf() -> bytes:
    objects = (
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>",
    )
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def _png(width: int = 16, height: int = 16) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    raw = b"".join(
        b"\x00" + b"".join(bytes((x * 16 % 256, y * 16 % 256, 128)) for x in range(width))
        for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, text in (("readme.txt", "Demo archive.\n"), ("data/numbers.csv", "a,b\n1,2\n")):
            archive.writestr(zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0)), text)
    return buffer.getvalue()


def _json(host: DemoHost, articles: int) -> bytes:
    stats = {"site": host.name, "topical_articles": articles, "lang": host.lang}
    return json.dumps(stats, ensure_ascii=False, sort_keys=True).encode("utf-8")
