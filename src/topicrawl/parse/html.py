"""HTML parsing: title, visible text, language, canonical URL, robots meta, and links in blocks.

:func:`parse_html` parses a document once with Lexbor (selectolax) and extracts everything the
crawl needs from it. It never raises on malformed or hostile input; what cannot be understood
is left out.

Text
    The visible text of ``<body>``: the content of script, style, noscript, template, svg,
    math, iframe, object, embed, canvas, audio and video elements is dropped; inline elements
    (a, span, b, em, code, ...) join their text to their neighbours'; any other element
    (p, div, li, td, h1, br, ...) is a block boundary and becomes a line break. Whitespace
    runs collapse to one space and empty lines are dropped. Elements hidden by CSS or the
    ``hidden`` attribute still count: telling them apart would cost a look at every element's
    attributes, several times the cost of the rest of the text extraction.

Links
    Every ``<a href>`` and ``<area href>`` outside the dropped elements, resolved against
    ``<base href>`` (or the page URL) and canonicalised; hrefs that are empty, fragment-only,
    longer than 4096 characters, of another scheme than http(s) (javascript:, mailto:, tel:,
    data:, ...) or not valid URLs are skipped. The anchor text is the element's text, or when
    that is empty the alt text of its first image (an area's own alt), or its title attribute.
    A link is ``nofollow`` when its rel has the nofollow token, and every link is when the
    page's robots meta says nofollow. Links are de-duplicated by URL: the first occurrence
    fixes the position and block, the longest anchor text among the occurrences is kept, and
    the link is nofollow only when every occurrence is. At most 5000 distinct links are kept
    per page and at most 20000 anchors are examined.

Link blocks
    A link's block is its nearest ancestor element that is a block container: ul, ol, menu,
    nav, dl, table, p, div, section, article, aside, header, footer, main, form or body (the
    root element when none of these encloses the link). li, dt, dd, tr, td and the headings
    are not containers, so the links of one menu list, one definition list or one table share
    a block. Blocks are numbered 0, 1, ... in the order in which the first kept link of each
    appears in the document, so ``Link.block`` values are dense. ``Link.block_text`` is the
    extended anchor text of the block: the distinct non-empty anchor texts of all the links
    in the block (every occurrence, including duplicates of a link kept in an earlier block),
    in document order, joined with " | " and capped at 2000 characters.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from urllib.parse import urljoin

from selectolax.lexbor import LexborDocumentOptions, LexborHTMLParser, LexborNode

from topicrawl.core.models import Link, ParsedPage
from topicrawl.parse.urls import canonicalize

__all__ = [
    "MAX_ANCHOR_CHARS",
    "MAX_BLOCK_TEXT_CHARS",
    "MAX_LINKS",
    "MAX_TEXT_CHARS",
    "MAX_TITLE_CHARS",
    "parse_html",
]

MAX_TITLE_CHARS = 1000
MAX_TEXT_CHARS = 1_000_000
MAX_ANCHOR_CHARS = 300
MAX_BLOCK_TEXT_CHARS = 2000
MAX_LINKS = 5000
# Anchors looked at per page: bounds the work on a page of 100k links, most of them repeats.
_MAX_ANCHORS_SCANNED = 20_000
_MAX_HREF_CHARS = 4096
_MAX_CACHED_CHARS = 300
_MAX_RAW_ANCHOR_CHARS = 4 * MAX_ANCHOR_CHARS  # of an anchor's text before collapsing spaces
_BLOCK_SEPARATOR = " | "

_INLINE_TAGS = (  # noqa: SIM905
    "a abbr acronym b bdi bdo big cite code data del dfn em font i img ins kbd label "
    "mark nobr q s samp small span strike strong sub sup time tt u var wbr"
).split()
_DROPPED_TAGS = (  # noqa: SIM905
    "script style noscript template svg math iframe object embed canvas audio video source"
).split()
_BLOCK_TAGS = (  # noqa: SIM905
    "ul ol menu nav dl table p div section article aside header footer main form body"
).split()


def _tag_ids(names: list[str]) -> frozenset[int]:
    # Lexbor numbers the standard tags the same way in every document.
    doc = LexborHTMLParser("")
    return frozenset(doc.create_node(name).tag_id for name in names)


_INLINE_IDS = _tag_ids(_INLINE_TAGS)
_DROPPED_IDS = _tag_ids(_DROPPED_TAGS)
_BLOCK_IDS = _tag_ids(_BLOCK_TAGS)
(_A_ID,) = _tag_ids(["a"])
(_AREA_ID,) = _tag_ids(["area"])
(_MAIN_ID,) = _tag_ids(["main"])
_HEAD_IDS = _tag_ids(["title", "base", "meta", "link"])
(_TITLE_ID,) = _tag_ids(["title"])
(_BASE_ID,) = _tag_ids(["base"])
(_META_ID,) = _tag_ids(["meta"])

_SEP = "\x00"  # between text nodes in the raw text; the parser never leaves NUL in text
_C0_AND_SPACE = "".join(map(chr, range(0x21)))
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_LANG = re.compile(r"[a-z]{1,8}(?:-[a-z0-9]{1,8})*")
_ROBOTS_SPLIT = re.compile(r"[\s,]+")


NodeProbe = Callable[[list[LexborNode], list[LexborNode]], None]
"""Sees a page's dropped elements (scripts, video, audio, iframes, ...) and head elements
(title, base, meta, link: anywhere in the page) before they are removed or read."""


def parse_html(
    html: str, *, url: str, probe: NodeProbe | None = None, find_main: bool = False
) -> ParsedPage:
    """Parse one HTML document fetched from ``url``.

    See the module documentation for what is extracted and the limits that apply. ``probe``
    is called once with the page's dropped and head elements before the dropped ones go
    (video detection looks there for its markers without another walk of the page). With
    ``find_main``, ``ParsedPage.main`` says where the text of the page's ``<main>`` element
    is (a page with one and only one).
    """
    if _SEP in html:
        html = html.replace(_SEP, "\ufffd")
    # Without mutation events, unwrapping an element costs the same at any depth; with them,
    # every unwrap walks the subtree, quadratic on deeply nested pages.
    doc = LexborHTMLParser(html, options=LexborDocumentOptions.WO_EVENTS)
    root = doc.root
    if root is None:
        return ParsedPage(title="", text="", links=())

    inline: list[LexborNode] = []
    dropped: list[LexborNode] = []
    anchors: list[LexborNode] = []
    head: list[LexborNode] = []
    mains: list[LexborNode] = []
    # One walk over the elements, sorting out the few kinds the rest of the work needs.
    for node in root.traverse():
        tag_id = node.tag_id
        if tag_id in _INLINE_IDS:
            inline.append(node)
            if tag_id == _A_ID:
                anchors.append(node)
        elif tag_id in _DROPPED_IDS:
            dropped.append(node)
        elif tag_id == _AREA_ID:
            anchors.append(node)
        elif tag_id in _HEAD_IDS:
            head.append(node)
        elif tag_id == _MAIN_ID:
            mains.append(node)
    if probe is not None:
        probe(dropped, head)
    for node in dropped:
        if node.parent is not None:  # not already gone with a dropped ancestor
            node.decompose()

    info = _HeadInfo.read(head, page_url=url)
    lang = _lang_of(root)
    links = _LinkCollector(info.resolver).collect(anchors, page_nofollow=info.nofollow)

    text = ""
    main = None
    body = doc.body
    if body is not None:
        for node in inline:
            node.unwrap(delete_empty=True)
        marked = find_main and len(mains) == 1 and _mark(mains[0], html)
        body.merge_text_nodes()
        if marked:
            text, main = _unmark(_collapse_lines(body.text(separator=_SEP, skip_empty=True), cap=0))
        else:
            text = _collapse_lines(body.text(separator=_SEP, skip_empty=True))
    return ParsedPage(
        title=info.title,
        text=text,
        links=links,
        lang=lang,
        canonical=info.canonical,
        noindex=info.noindex,
        nofollow=info.nofollow,
        main=main,
    )


_START, _END = "\x01", "\x02"  # where <main>'s text starts and ends, while it is read


def _mark(main: LexborNode, html: str) -> bool:
    """Put a mark at the start and the end of ``main``'s text (a text node before its first
    child, one after its last); False, and no marks, when the page has a mark character of
    its own (it could not be told apart)."""
    if _START in html or _END in html:
        return False
    first = main.child
    if first is None:
        return False
    first.insert_before(_START)
    main.insert_child(_END)
    return True


def _unmark(text: str) -> tuple[str, tuple[int, int] | None]:
    """The text without its two marks, capped, and where they were: ``(start, end)`` of the
    main element's text (None when it has none). A mark is a line of its own (next to an
    element) or joined to the first (last) text of ``<main>``, after (before) a space when
    that text began (ended) with one; each goes with its line break or space, so the text is
    the one the page gives without marks."""
    start, end = text.find(_START), text.find(_END)
    if start < 0 or end < start:  # not expected: the marks are in document order
        return _cap(text.replace(_START, "").replace(_END, "")), None
    # The end mark first (after the start, so the start's offset stays).
    if end > 0 and text[end - 1] in "\n ":  # a line of its own, or after a space
        text = text[: end - 1] + text[end + 1 :]
        end -= 1
    else:
        text = text[:end] + text[end + 1 :]
    cut = 2 if text.startswith(("\n", " "), start + 1) else 1
    text = text[:start] + text[start + cut :]
    end -= cut
    main = (start, end) if end > start else None
    text = _cap(text)
    if main is not None and main[1] > len(text):
        main = (start, len(text)) if start < len(text) else None
    return text, main


def _cap(text: str) -> str:
    return text[:MAX_TEXT_CHARS].rstrip("\n ") if len(text) > MAX_TEXT_CHARS else text


def _collapse_lines(raw: str, *, cap: int = MAX_TEXT_CHARS) -> str:
    """Collapse whitespace within lines; ``_SEP`` marks block boundaries, which become lines.

    Each piece between separators becomes one line, its whitespace runs collapsed to a space;
    empty lines are dropped. The maps and the filter run in C: a Python loop over the lines,
    or replacing in the whole text, costs more.
    """
    text = "\n".join(filter(None, map(" ".join, map(str.split, raw.split(_SEP)))))
    if cap and len(text) > cap:
        text = text[:cap].rstrip("\n ")
    return text


def _collapse(text: str, limit: int) -> str:
    if len(text) > 4 * limit:
        text = text[: 4 * limit]
    return " ".join(text.split())[:limit].rstrip()


def _lang_of(root: LexborNode) -> str | None:
    attrs = root.attributes
    value = attrs.get("lang") or attrs.get("xml:lang")
    if not value:
        return None
    lang = value.strip().replace("_", "-").lower()
    return lang if len(lang) <= 35 and _LANG.fullmatch(lang) else None


class _Resolver:
    """Turns the hrefs of one page into canonical absolute URLs (or ``None`` to skip them)."""

    __slots__ = ("_base", "_base_dir")

    def __init__(self, base: str | None) -> None:
        self._base = base
        # Most hrefs resolve against the base's directory alone, so keying the caches on it
        # lets every page of one directory share their entries.
        self._base_dir = _directory_of(base) if base is not None else ""

    def resolve(self, href: str) -> str | None:
        if len(href) <= _MAX_CACHED_CHARS:
            url = _resolve_in_directory_cached(self._base_dir, href)
        elif len(href) <= _MAX_HREF_CHARS:
            url = _resolve_in_directory(self._base_dir, href)
        else:
            return None
        if url is not _NEEDS_BASE:
            return url
        if self._base is None:
            return None
        return _canonical_join(self._base, _clean_href(href))


_UNSEEN = "not resolved yet"  # urls.get default: an href this page has not resolved yet

# What _resolve_in_directory answers for an href whose resolution needs the base's own path
# and query, not just its directory: "?query", "//", "http:?query".
_NEEDS_BASE = "needs the base URL"


def _resolve_in_directory(base_dir: str, href: str) -> str | None:
    """The canonical URL of ``href`` on a page in ``base_dir`` ("" if the page has none).

    Returns ``None`` for an href to skip, and ``_NEEDS_BASE`` when the directory does not
    determine the URL.
    """
    href = _clean_href(href)
    if not href or len(href) > _MAX_HREF_CHARS:
        return None
    rest = href
    scheme = _SCHEME.match(href)
    if scheme is not None:
        name = scheme.group()[:-1].lower()
        if name not in {"http", "https"}:
            return None
        rest = href[scheme.end() :]
        if rest.startswith("//"):
            return _canonical_join("", href)
        # "http:path" is relative to a base of the same scheme.
    if not rest or rest[0] == "?" or rest == "//" or rest.startswith("//?"):
        return _NEEDS_BASE  # no path to resolve: urljoin keeps the base's path (and query)
    if not base_dir:
        return None
    # Not through _absolute_cached: the caller caches this very resolution, by the same keys
    # less the cleaning; a second cache would cost a lookup and an entry per miss for nothing.
    return _absolute(base_dir, href)


def _clean_href(href: str) -> str:
    """Strip an href the way browsers do, and drop its fragment."""
    href = href.strip(_C0_AND_SPACE)
    if "\t" in href or "\n" in href or "\r" in href:
        href = href.replace("\t", "").replace("\n", "").replace("\r", "")
    return href.partition("#")[0]


def _directory_of(base: str) -> str:
    query = base.find("?")
    path = base if query < 0 else base[:query]
    return path[: path.rfind("/") + 1]


def _canonical_join(base: str, href: str) -> str | None:
    """Canonical absolute URL of ``href`` against ``base`` ("" for an absolute href)."""
    if len(href) <= _MAX_CACHED_CHARS:
        return _absolute_cached(base, href)
    return _absolute(base, href)


def _absolute(base: str, href: str) -> str | None:
    try:
        joined = _join(base, href) if base else href
        return canonicalize(joined)
    except ValueError:  # InvalidUrl, and urlsplit's errors for bad ports and IPv6 literals
        return None


# Resolutions are cached across pages, as sites repeat their links (menus, footers); hrefs
# longer than _MAX_CACHED_CHARS are not, so a hostile site cannot fill the caches with
# megabytes of unique hrefs.
_resolve_in_directory_cached = lru_cache(maxsize=32768)(_resolve_in_directory)
_absolute_cached = lru_cache(maxsize=32768)(_absolute)


# A relative reference that urljoin would read as a plain path (with an optional query): no
# scheme (no ":" before the query), no authority ("//"), no path parameters (";"), and no
# backslash. A fragment has been removed before.
_PLAIN_RELATIVE = re.compile(r"(?!//)[^:?;\\]+(?:\?.*)?", re.DOTALL)
_DOT_SEGMENT = re.compile(r"(?:^|/)\.\.?(?:/|$)")


def _join(base: str, href: str) -> str:
    """``urllib.parse.urljoin(base, href)``, with a quicker path for plain relative paths.

    ``base`` is a canonical URL whose path is a directory (ends with "/") when the quicker
    path applies; its result equals urljoin's, which tests check.
    """
    if not base.endswith("/") or _PLAIN_RELATIVE.fullmatch(href) is None:
        return urljoin(base, href)
    authority_end = base.find("/", base.find("//") + 2)
    origin, base_path = base[:authority_end], base[authority_end:]
    path, _, query = href.partition("?")
    if "//" not in path and "//" not in base_path and "/." not in base_path:
        # The usual href on the usual base: some "../" and then a path without dot or empty
        # segments.
        ups = 0
        while path.startswith("../", 3 * ups):
            ups += 1
        rest = path[3 * ups :] if ups else path
        # A dot segment starts the path or follows a "/": the regex only runs when one may.
        if not ((rest.startswith(".") or "/." in rest) and _DOT_SEGMENT.search(rest)):
            if rest.startswith("/"):
                joined = origin + rest
            else:
                if ups:  # up that many directories, and no further than the root
                    base_path = base_path.rsplit("/", ups + 1)[0] + "/"
                joined = origin + base_path + rest
            return f"{joined}?{query}" if query else joined
    if path[0] == "/":
        segments = path.split("/")
    else:
        # urljoin's own rules: the base's directory segments, then the href's, with the empty
        # segments in between dropped.
        segments = base_path.split("/") + path.split("/")
        segments[1:-1] = [segment for segment in segments[1:-1] if segment]
    resolved: list[str] = []
    for segment in segments:
        if segment == "..":
            if resolved:
                resolved.pop()
        elif segment != ".":
            resolved.append(segment)
    if segments[-1] in (".", ".."):
        resolved.append("")
    joined = origin + ("/".join(resolved) or "/")
    if joined[len(origin)] != "/":
        joined = origin + "/" + joined[len(origin) :]
    return f"{joined}?{query}" if query else joined


class _HeadInfo:
    """What the page says about itself: title, base, canonical URL, robots directives."""

    __slots__ = ("canonical", "nofollow", "noindex", "resolver", "title")

    def __init__(self) -> None:
        self.title = ""
        self.canonical: str | None = None
        self.noindex = False
        self.nofollow = False
        self.resolver = _Resolver(None)

    @classmethod
    def read(cls, nodes: list[LexborNode], *, page_url: str) -> _HeadInfo:
        info = cls()
        base_href: str | None = None
        canonical_href: str | None = None
        title: str | None = None
        for node in nodes:
            if node.parent is None:  # inside a dropped element, e.g. an svg <title>
                continue
            tag_id = node.tag_id
            if tag_id == _TITLE_ID:
                if title is None:
                    title = node.text()
                continue
            attrs = node.attributes
            if tag_id == _META_ID:
                if (attrs.get("name") or "").strip().lower() == "robots":
                    info._read_robots(attrs.get("content") or "")
            elif tag_id == _BASE_ID:
                if base_href is None:
                    base_href = attrs.get("href")
            elif canonical_href is None:  # <link>
                rel = attrs.get("rel")
                if rel and "canonical" in rel.lower().split():
                    canonical_href = attrs.get("href")
        info.title = _collapse(title or "", MAX_TITLE_CHARS)
        page = _canonical_join("", page_url)
        base = page
        if base_href is not None:
            base = _Resolver(page).resolve(base_href) or page
        info.resolver = _Resolver(base)
        if canonical_href is not None:
            info.canonical = info.resolver.resolve(canonical_href)
        return info

    def _read_robots(self, content: str) -> None:
        directives = _ROBOTS_SPLIT.split(content.lower())
        if "none" in directives:
            self.noindex = self.nofollow = True
        if "noindex" in directives:
            self.noindex = True
        if "nofollow" in directives:
            self.nofollow = True


class _Block:
    """A link block of a page: its number and the distinct anchor texts of its links."""

    __slots__ = ("_joined", "length", "number", "texts")

    def __init__(self) -> None:
        self.number = -1  # numbered when the first link is placed in it
        self.texts: dict[str, None] = {}
        self.length = 0  # of the texts joined, roughly: adding stops past the cap
        self._joined: str | None = None

    def text(self) -> str:
        if self._joined is None:
            self._joined = _BLOCK_SEPARATOR.join(self.texts)[:MAX_BLOCK_TEXT_CHARS]
        return self._joined


# The merged occurrences of one URL on a page: the longest anchor text, the block of the
# first occurrence, and whether every occurrence is nofollow. A tuple, replaced on the rare
# change, costs less per anchor than an object with attributes.
_Occurrence = tuple[str, _Block, bool]
_new_tuple = tuple.__new__  # Link(...) runs a Python-level __new__; this builds the same tuple


class _LinkCollector:
    """Resolves, de-duplicates and groups into blocks the anchors of one page."""

    __slots__ = ("_block_of_node", "_resolver", "_root_block")

    def __init__(self, resolver: _Resolver) -> None:
        self._resolver = resolver
        # mem_id of an element -> the block of the links under it (memoised up to the block
        # container); the links that no container encloses share the root block.
        self._block_of_node: dict[int, _Block] = {}
        self._root_block = _Block()

    def collect(self, anchors: list[LexborNode], *, page_nofollow: bool) -> tuple[Link, ...]:
        found: dict[str, _Occurrence] = {}  # by URL, in order of first occurrence
        urls: dict[str, str | None] = {}  # href as written -> URL; pages repeat their hrefs
        numbered = 0  # blocks that hold a link
        memo = self._block_of_node
        resolve = self._resolver.resolve
        # The loop is the hot spot of parsing: it runs once per anchor, so it calls as few
        # functions as it can. Each selectolax property builds Python objects: one
        # ``attributes`` dict costs less than ``attrs`` plus a lookup per name (a missing
        # name raises KeyError inside ``attrs.get``).
        for node in anchors[:_MAX_ANCHORS_SCANNED]:
            attrs = node.attributes
            href = attrs.get("href")
            if not href:
                continue
            fragment = href.find("#")
            if fragment >= 0:
                if fragment == 0:
                    continue  # the page itself
                # Without the fragment, the hrefs to one page share their cache entries (unless
                # a space before the "#" would then be stripped, unlike browsers do).
                if href[fragment - 1] > " ":
                    href = href[:fragment]
            url = urls.get(href, _UNSEEN)
            if url is _UNSEEN:
                url = urls[href] = resolve(href)
            if url is None:
                continue
            parent = node.parent
            if parent is None:  # inside a dropped element
                continue
            anchor = node.text(separator=" ")
            # Most anchor texts are one word, with no whitespace to collapse: the space is the
            # only whitespace character that isprintable() accepts.
            if " " in anchor or not anchor.isprintable():
                anchor = " ".join(anchor[:_MAX_RAW_ANCHOR_CHARS].split())
            if not anchor:
                anchor = _fallback_anchor_text(node, attrs)
            elif len(anchor) > MAX_ANCHOR_CHARS:
                anchor = anchor[:MAX_ANCHOR_CHARS].rstrip()
            rel = attrs.get("rel")
            nofollow = rel is not None and "nofollow" in rel.lower().split()
            key = parent.mem_id
            block = memo.get(key)
            if block is None:
                block = self._block_of(parent, key)
            if anchor and block.length < MAX_BLOCK_TEXT_CHARS and anchor not in block.texts:
                block.texts[anchor] = None
                block.length += len(anchor) + len(_BLOCK_SEPARATOR)
            seen = found.get(url)
            if seen is None:
                if len(found) < MAX_LINKS:
                    if block.number < 0:
                        block.number = numbered
                        numbered += 1
                    found[url] = (anchor, block, nofollow)
                continue
            seen_anchor, seen_block, seen_nofollow = seen
            if len(anchor) > len(seen_anchor):
                found[url] = (anchor, seen_block, seen_nofollow and nofollow)
            elif seen_nofollow and not nofollow:
                found[url] = (seen_anchor, seen_block, False)
        return tuple(
            _new_tuple(Link, (url, anchor, block.number, block.text(), page_nofollow or nofollow))
            for url, (anchor, block, nofollow) in found.items()
        )

    def _block_of(self, parent: LexborNode, key: int) -> _Block:
        """The block of the links in ``parent`` (whose ``mem_id`` is ``key``, not memoised yet).

        It is that of the nearest block container at or above ``parent``; the elements
        passed on the way are memoised.
        """
        memo = self._block_of_node
        passed: list[int] = []
        ancestor = parent
        while True:
            if ancestor.tag_id in _BLOCK_IDS:
                block = memo[key] = _Block()
                break
            passed.append(key)
            above = ancestor.parent
            if above is None:
                block = self._root_block
                break
            ancestor = above
            key = ancestor.mem_id
            known = memo.get(key)
            if known is not None:
                block = known
                break
        for key in passed:
            memo[key] = block
        return block


def _fallback_anchor_text(node: LexborNode, attrs: dict[str, str | None]) -> str:
    """For an anchor without text: the alt text of its image (or an area's own), or its title."""
    alt = attrs.get("alt")
    if not alt and node.tag_id == _A_ID:
        image = node.css_first("img[alt]")
        if image is not None:
            alt = image.attributes.get("alt")
    text = _collapse(alt or "", MAX_ANCHOR_CHARS)
    return text or _collapse(attrs.get("title") or "", MAX_ANCHOR_CHARS)
