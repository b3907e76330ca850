"""Turns demo-web records into bytes: HTML, robots.txt, sitemap.xml, feeds, huge and bomb
bodies."""

from __future__ import annotations

import functools
import html
import itertools
import struct
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import TYPE_CHECKING

from topicrawl.demoweb.model import DemoLink, DemoPage, Kind
from topicrawl.demoweb.text import TOPICS

if TYPE_CHECKING:
    from topicrawl.demoweb.graph import DemoWeb

__all__ = [
    "FEED_SIZE",
    "content_type",
    "feed_entries",
    "feed_xml",
    "gzip_bomb",
    "huge_chunks",
    "render_document",
    "robots_txt",
    "sitemap_xml",
]

_HEADINGS = {
    "related": ("Related articles", "相关文章"),
    "latest": ("Latest", "最新文章"),
    "list": ("All articles", "全部文章"),
    "results": ("Results", "搜索结果"),
    "lab": ("Lab", "实验室"),
    "pager": ("More months", "更多月份"),
    "partners": ("Partner sites", "合作网站"),
}
_FOOTER_BLOCKS = frozenset({"footer", "partners"})
# Bytes that are not valid UTF-8 (nor GBK): a decoder must replace or skip them.
GARBAGE = b"\xff\xfe\x80\x81\xc3\x28\xa0\xa1\x00\x1b[0m"


def content_type(page: DemoPage) -> str:
    """The Content-Type header the server sends for ``page``."""
    if page.is_document or page.kind is Kind.ERROR:
        return f"text/html; charset={page.header_charset}" if page.header_charset else "text/html"
    if page.kind is Kind.ROBOTS:
        return "text/plain; charset=utf-8"
    return page.content_type


def _anchor(link: DemoLink, page: DemoPage, port: int) -> str:
    href = html.escape(link.href(page=page, port=port), quote=True)
    if link.nofollow:
        rel = ' rel="nofollow sponsored"'
    elif link.host != page.host:
        rel = ' rel="external noopener"'  # not nofollow: a parser must not treat it as such
    else:
        rel = ""
    return f'<a href="{href}"{rel}>{html.escape(link.anchor)}</a>'


def _paragraph(page: DemoPage, index: int, sentences: tuple[str, ...], port: int) -> str:
    zh = page.lang == "zh"
    parts = [html.escape(s) for s in sentences]
    inline = [_anchor(link, page, port) for link in page.links if link.paragraph == index]
    if inline:
        lead, joiner, stop = ("延伸阅读：", "、", "。") if zh else ("Read more: ", ", ", ".")
        parts.insert(1, lead + joiner.join(inline) + stop)
    return "<p>" + ("" if zh else " ").join(parts) + "</p>"


def render_document(web: DemoWeb, page: DemoPage) -> bytes:
    """The HTML of a document, encoded as the page says (charset lies included).

    Links are grouped in real DOM blocks: ``<nav><ul>`` for the menu, a ``<div>`` with a
    ``<ul>`` per other block (related, latest, list, ...), in-text links inside ``<p>``, and
    the footer blocks inside ``<footer>``.
    """
    port = web.port
    zh = page.lang == "zh"
    site = web.host(page.host).name
    head = [f'<!DOCTYPE html>\n<html lang="{page.lang or "en"}">\n<head>']
    if page.meta_charset:
        head.append(f'<meta charset="{page.meta_charset}">')
    head.append(f"<title>{html.escape(page.title)} | {html.escape(site)}</title>")
    if page.noindex or page.nofollow:
        flags = ",".join(
            f for f, on in (("noindex", page.noindex), ("nofollow", page.nofollow)) if on
        )
        head.append(f'<meta name="robots" content="{flags}">')
    head.append("</head>\n<body>")
    head.append(f'<header class="site-header"><p class="logo">{html.escape(site)}</p></header>')

    blocks: dict[str, list[str]] = {}
    for link in page.links:
        if link.block != "body":
            blocks.setdefault(link.block, []).append(_anchor(link, page, port))
    out = list(head)
    if "nav" in blocks:
        out.append(
            '<nav class="menu"><ul>'
            + "".join(f"<li>{a}</li>" for a in blocks["nav"])
            + "</ul></nav>"
        )
    out.append(f"<main>\n<article>\n<h1>{html.escape(page.title)}</h1>")
    out += [_paragraph(page, i, sentences, port) for i, sentences in enumerate(page.paragraphs)]
    out.append("</article>")
    for name, anchors in blocks.items():
        if name == "nav" or name in _FOOTER_BLOCKS:
            continue
        out.append(_block(name, anchors, zh))
    out.append("</main>\n<footer>")
    out += [_block(name, blocks[name], zh) for name in ("footer", "partners") if name in blocks]
    out.append(f"<p>&copy; 2024 {html.escape(site)}</p>\n</footer>\n</body>\n</html>\n")
    markup = "\n".join(out)
    if page.kind is Kind.BROKEN:
        return _break(markup).encode(page.encoding).replace(b"<!--garbage-->", GARBAGE)
    return markup.encode(page.encoding)


def _block(name: str, anchors: list[str], zh: bool) -> str:
    heading = _HEADINGS.get(name)
    for topic in TOPICS:
        if name == f"teaser-{topic.slug}":
            heading = (topic.name_en, topic.name_zh)
    title = f"<h2>{heading[1] if zh else heading[0]}</h2>" if heading else ""
    items = "".join(f"<li>{a}</li>" for a in anchors)
    return f'<div class="block block-{name}">{title}<ul>{items}</ul></div>'


def _break(markup: str) -> str:
    """Damage well-formed markup the way real pages are damaged; anchors stay parseable."""
    markup = markup.replace("</p>", "").replace("</li>", "").replace("</html>\n", "")
    markup = markup.replace("</nav>", "</nav></div></div>", 1)
    markup = markup.replace("<main>", '<main><div class="wrapper"><b><font color=red>', 1)
    return markup.replace(
        "</h1>", "</h1><!--garbage--><p>unclosed <i>italic <table><tr><td>cell", 1
    )


def robots_txt(web: DemoWeb, address: str) -> str:
    """The host's robots.txt: a blocked bad bot, the ``*`` rules, Crawl-delay, the sitemap."""
    host = web.host(address)
    lines = [
        f"# robots.txt for {host.name}",
        "User-agent: BadBot",
        "Disallow: /",
        "",
        "User-agent: *",
    ]
    lines += [f"Disallow: {prefix}" for prefix in host.disallow]
    lines += [f"Allow: {prefix}" for prefix in host.allow]
    if host.crawl_delay > 0:
        lines.append(f"Crawl-delay: {host.crawl_delay:g}")
    lines += ["", f"Sitemap: {web.base_url(address)}sitemap.xml", ""]
    return "\n".join(lines)


def sitemap_xml(web: DemoWeb, address: str) -> str:
    """The host's sitemap: its home, section and article pages (not the lab, not private)."""
    listed = (Kind.HOME, Kind.SECTION, Kind.ARTICLE)
    entries = []
    for n, page in enumerate(p for p in web.pages if p.host == address and p.kind in listed):
        if page.duplicate_of is None:
            url = html.escape(web.url_of(page))
            entries.append(
                f"<url><loc>{url}</loc><lastmod>2024-01-{n % 28 + 1:02d}</lastmod></url>"
            )
    body = "\n".join(entries)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{body}\n</urlset>\n'
    )


FEED_SIZE = 20
"""Articles a host's feeds list: its first ones, in page order, newest first."""

_FEED_EPOCH = datetime(2024, 3, 1, 8, 0, tzinfo=UTC)


def feed_entries(web: DemoWeb, address: str) -> list[tuple[DemoPage, datetime]]:
    """The articles a host's feeds list, with their publication times (one a day back from
    2024-03-01 08:00 UTC): the ground truth for feed readers."""
    articles = (
        p for p in web.pages if p.host == address and p.kind is Kind.ARTICLE and not p.duplicate_of
    )
    return [
        (page, _FEED_EPOCH - timedelta(days=n))
        for n, page in zip(range(FEED_SIZE), articles, strict=False)
    ]


def feed_xml(web: DemoWeb, page: DemoPage) -> str:
    """A host's feed: RSS 2.0 for ``/feed.rss``; Atom 1.0 for ``/feed.atom``, whose entry
    links are root-relative and resolve against the feed's ``xml:base``."""
    host = web.host(page.host)
    base = web.base_url(page.host)
    entries = feed_entries(web, page.host)
    name = html.escape(host.name)
    if page.content_type == "application/atom+xml":
        items = "\n".join(
            f"<entry><title>{html.escape(article.title)}</title>"
            f'<link rel="alternate" type="text/html" href="{html.escape(article.path)}"/>'
            f"<id>{html.escape(web.url_of(article))}</id>"
            f"<updated>{when.isoformat().replace('+00:00', 'Z')}</updated></entry>"
            for article, when in entries
        )
        updated = _FEED_EPOCH.isoformat().replace("+00:00", "Z")
        return (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<feed xmlns="http://www.w3.org/2005/Atom" xml:base="{html.escape(base)}">\n'
            f"<title>{name}</title><id>{html.escape(base)}</id><updated>{updated}</updated>\n"
            f'<link rel="self" href="{html.escape(web.url_of(page))}"/>\n{items}\n</feed>\n'
        )
    items = "\n".join(
        f"<item><title>{html.escape(article.title)}</title>"
        f"<link>{html.escape(web.url_of(article))}</link>"
        f'<guid isPermaLink="true">{html.escape(web.url_of(article))}</guid>'
        f"<pubDate>{format_datetime(when, usegmt=True)}</pubDate></item>"
        for article, when in entries
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel>\n'
        f"<title>{name}</title><link>{html.escape(base)}</link>"
        f"<description>{name}</description>\n{items}\n</channel></rss>\n"
    )


def huge_chunks(web: DemoWeb, page: DemoPage, chunk_size: int = 65_536) -> Iterator[bytes]:
    """Exactly ``page.size`` bytes of HTML: the head and menu, then paragraphs, never closed."""
    head = render_document(web, page).split(b"<main>", 1)[0] + b"<main>\n"
    filler = "".join(f"<p>{html.escape(' '.join(s))}</p>\n" for s in page.paragraphs).encode()
    chunk = (filler or b"<p>.</p>\n") * max(1, chunk_size // max(1, len(filler)))
    remaining = page.size
    for data in itertools.chain((head,), itertools.repeat(chunk)):
        if remaining <= 0:
            return
        piece = data[:remaining]
        remaining -= len(piece)
        yield piece


@functools.cache
def gzip_bomb(size: int) -> bytes:
    """A gzip body that inflates to ``size`` spaces after an HTML prologue (~1 KB per MiB).

    Built from one compressed MiB repeated: after a full flush, deflate output for the same
    input is the same bytes, so the bomb costs one small compression and a CRC pass.
    """
    prologue = b"<!DOCTYPE html><html><head><title>archive</title></head><body>"
    size = max(size, len(prologue))
    mib = 1 << 20
    block = b" " * mib
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    parts = [compressor.compress(prologue) + compressor.flush(zlib.Z_FULL_FLUSH)]
    crc = zlib.crc32(prologue)
    full, rest = divmod(size - len(prologue), mib)
    if full:
        repeated = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
        parts.append(repeated * full)
        for _ in range(full):
            crc = zlib.crc32(block, crc)
    parts.append(compressor.compress(b" " * rest) + compressor.flush(zlib.Z_FINISH))
    crc = zlib.crc32(b" " * rest, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # gzip, deflate, no name, mtime 0
    return header + b"".join(parts) + struct.pack("<II", crc & 0xFFFFFFFF, size & 0xFFFFFFFF)
