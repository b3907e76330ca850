"""Parsing one document end to end, and the worker process that does it off the event loop.

:func:`parse_body` decodes a fetched body (the fetcher may leave that to the parser), parses
it and hashes its text. The engine runs it inline or in worker processes started as
``python -m topicrawl.parse.worker``; this module imports only the parsing stack (selectolax,
w3lib, charset detection), so a worker costs ~30 MB, not the whole crawler.

A request is an 8-byte head (two big-endian lengths), a pickle of ``(job, url, charset,
is_text)`` and the body's bytes as they are (UTF-8 when the fetcher had decoded it already):
the body is neither pickled nor joined to its head, so the event loop makes no copy of it on
the way to the pipe. A reply is a 4-byte big-endian length and a pickle of
``(job, True, packed)`` or ``(job, False, message)`` where ``packed`` is
:func:`pack`'s plain-tuple form: unpickling hundreds of link objects costs the event loop
several times more than unpickling tuples and building the links there. The pipes only
carry data this crawler's own processes wrote, so unpickling them is safe.

A worker may also count each page's terms for the crawl's strategy (its
:class:`~topicrawl.core.protocols.TextAnalyzer`), the other large per-page cost of a focused
crawl: a request with job number :data:`ANALYZER_JOB` carries the pickled analyzer as its
body and gets no reply; from then on every reply's ``packed`` ends with the page's term
counts. An analyzer that cannot be loaded, or that fails on a page, leaves the counts out
(``None``): the strategy then counts the page itself, so nothing is lost but time.

A request with job number :data:`BUDGET_JOB` carries the CPU seconds one page may take: the
worker arms a CPU-time interval timer around each page, and a page that burns more ends the
worker by ``SIGPROF`` (its parent fails that page and hands the rest to a new worker).

Likewise a request with job number :data:`ENTITIES_JOB` gives the worker the crawl's entity
analyzer (:class:`topicrawl.kg.analyse.EntityAnalyzer`): from then on every reply's
``packed`` ends with the page's recognised entities and relations as plain tuples, or
``None`` when the analyzer failed on the page (the page itself is fine).

With a crawl's parser schemas (:data:`PARSERS_JOB` carries the pickled
:class:`~topicrawl.parse.methods.ParserConfig`), a request may carry a
:class:`~topicrawl.parse.methods.Hint` (its pattern's remembered method and fingerprints):
the worker then runs the parser library's methods on the page and every reply's ``packed``
ends with the :class:`~topicrawl.parse.methods.Extraction` (None for pages with no hint, so
pages that match no schema cost nothing more).
"""

from __future__ import annotations

import gc
import pickle
import signal
import struct
import sys
import traceback
from collections.abc import Mapping
from typing import TYPE_CHECKING, BinaryIO, NamedTuple, Protocol, cast

from topicrawl.core.models import (
    EntityMention,
    Link,
    MediaUrl,
    PageEntities,
    ParsedPage,
    RelationMention,
)
from topicrawl.parse.charset import decode_body
from topicrawl.parse.content import content_hash_of_lines
from topicrawl.parse.html import parse_html
from topicrawl.parse.video.detect import detect_video, nodes_have_video_markers
from topicrawl.parse.video.model import VideoPage

if TYPE_CHECKING:
    from selectolax.lexbor import LexborNode

    from topicrawl.core.protocols import TextAnalyzer
    from topicrawl.parse.methods.extract import Extraction, Hint
    from topicrawl.parse.methods.schema import ParserConfig

__all__ = [
    "ANALYZER_JOB",
    "BUDGET_JOB",
    "CPU_LIMITED",
    "ENTITIES_JOB",
    "HEADER",
    "PARSERS_JOB",
    "REQUEST_HEAD",
    "EntityAnalyzer",
    "Packed",
    "ParsedDocument",
    "analyzer_frame",
    "budget_frame",
    "entities_frame",
    "pack",
    "parse_body",
    "parsers_frame",
    "read_frame",
    "request_frame",
    "serve",
    "unpack",
    "write_frame",
]

HEADER = struct.Struct(">I")  # a reply's length
REQUEST_HEAD = struct.Struct(">II")  # a request's pickled part's length, its body's length
# Pipes of 1 MiB (Linux's default limit for unprivileged processes) instead of 64 KiB: a
# page's body goes into the kernel in one write instead of waiting, copied, in the event
# loop's write buffer while the worker drains the pipe 64 KiB at a time.
_PIPE_BYTES = 1 << 20
_F_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ, which Python 3.11's fcntl names only on Linux
ANALYZER_JOB = -1
"""The job number of a request that gives the worker its text analyzer (no reply)."""
ENTITIES_JOB = -2
"""The job number of a request that gives the worker its entity analyzer (no reply)."""
PARSERS_JOB = -3
"""The job number of a request that gives the worker the crawl's parser schemas (no reply)."""
BUDGET_JOB = -4
"""The job number of a request whose body is the CPU seconds one page may take (no reply)."""
CPU_LIMITED = hasattr(signal, "setitimer")
"""Whether a worker can bound a page's CPU time itself (POSIX interval timers)."""


class EntityAnalyzer(Protocol):
    """Finds a page's entities and relations from its title and text, given where the
    text's main content is when the parser found it (it must pickle)."""

    def __call__(
        self, title: str, text: str, *, main: tuple[int, int] | None = None
    ) -> PageEntities: ...


# What pack() makes: ParsedPage's fields with links as plain tuples, then digest, encoding,
# term counts and entities (mentions and relations as plain tuples).
_PackedLinks = tuple[tuple[str, str, int, str, bool], ...]
_PackedEntities = tuple[
    tuple[tuple[str, str, str, int, int, float], ...],
    tuple[tuple[str, str, str, float, str], ...],
]
# A video page: class, media (url, type, width, height, bitrate, source), manifests, embeds,
# signals, about.
_PackedVideo = tuple[
    str,
    tuple[tuple[str, str, int | None, int | None, int | None, str], ...],
    tuple[str, ...],
    tuple[str, ...],
    tuple[str, ...],
    bool,
]
Packed = tuple[
    str,
    str,
    _PackedLinks,
    str | None,
    str | None,
    bool,
    bool,
    str | None,
    str | None,
    Mapping[str, int] | None,
    _PackedEntities | None,
    "Extraction | None",
    _PackedVideo | None,
    tuple[int, int] | None,
]


class ParsedDocument(NamedTuple):
    """A parsed document: the page, the hash of its normalised text, the encoding it used,
    its term counts when an analyzer counted them, its entities when an entity analyzer
    looked for them, and its video verdict when it is a video or play page."""

    page: ParsedPage
    digest: str | None
    encoding: str | None
    terms: Mapping[str, int] | None = None
    entities: PageEntities | None = None
    extraction: Extraction | None = None
    video: VideoPage | None = None


def parse_body(
    body: bytes | str,
    url: str,
    *,
    charset: str | None = None,
    analyzer: TextAnalyzer | None = None,
    entity_analyzer: EntityAnalyzer | None = None,
    parsers: ParserConfig | None = None,
    hint: Hint | None = None,
    video: bool = True,
    find_main: bool | None = None,
) -> ParsedDocument:
    """Decode (unless ``body`` is text already), parse and hash one HTML document, count its
    terms with ``analyzer`` and find its entities with ``entity_analyzer`` if given.

    ``charset`` is what the response header declared; the decoder checks it (BOM, header,
    ``<meta>``, then detection), so a wrong declaration never garbles the text. An analyzer
    that fails leaves ``terms`` None (the error goes to stderr): the page itself is fine.
    With ``parsers`` and a ``hint``, the parser library extracts the page's record.
    With ``video``, the page is checked for video (:mod:`topicrawl.parse.video`; a page with
    no video marker costs a few substring searches). With ``find_main`` (by default, when
    there is an ``entity_analyzer``: it reads only the title and the main content), the page's
    ``main`` is looked for (:func:`~topicrawl.parse.html.parse_html`).
    """
    if isinstance(body, str):
        html, encoding = body, None
    else:
        decoded = decode_body(body, declared=charset)
        html, encoding = decoded.text, decoded.encoding
    # Parsing makes a Python object per element, anchor and attribute set, and none of them
    # forms a reference cycle; the cyclic garbage collector, which runs every 700 allocations
    # and walks the long lists of nodes again, is held off until the page is parsed.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    marked = False

    def probe(dropped: list[LexborNode], head: list[LexborNode]) -> None:
        nonlocal marked
        marked = nodes_have_video_markers(dropped, head)

    try:
        page = parse_html(
            html,
            url=url,
            probe=probe if video else None,
            find_main=entity_analyzer is not None if find_main is None else find_main,
        )
    finally:
        if gc_was_enabled:
            gc.enable()
    # parse_html's text is lines of single-spaced words, which content_hash_of_lines needs.
    digest = content_hash_of_lines(page.text) if page.text else None
    terms = None
    if analyzer is not None:
        try:
            terms = analyzer(page.title, page.text)
        except Exception:  # any analyzer bug: the strategy counts the page itself
            _report_analyzer_failure(url, "text")
    entities = None
    if entity_analyzer is not None:
        try:
            entities = entity_analyzer(page.title, page.text, main=page.main)
        except Exception:  # any analyzer bug: the page goes on without its entities
            _report_analyzer_failure(url, "entity")
    extraction = None
    if parsers is not None and hint is not None:
        schema = parsers.by_name(hint.schema)
        if schema is not None:
            from topicrawl.parse.methods.extract import extract  # noqa: PLC0415 - lxml, parsel

            try:
                extraction = extract(html, url, schema, hint)
            except Exception:  # a library bug: the page goes on without its record
                _report_analyzer_failure(url, "parser library")
    found = None
    if marked:  # the parse saw video markers: read the page again for its video
        try:
            found = detect_video(html, url, prefilter=False)
        except (ValueError, RecursionError):  # hostile markup: the page goes on without it
            _report_analyzer_failure(url, "video")
        if found is not None and found.video_class == "none":
            found = None
    return ParsedDocument(page, digest, encoding, terms, entities, extraction, found)


_analyzer_failures: dict[str, int] = {}


def _report_analyzer_failure(url: str, which: str) -> None:
    """The first failure's traceback goes to stderr, then a line at the 10th, 100th, ...: an
    analyzer that fails on every page must not print a traceback a page."""
    count = _analyzer_failures[which] = _analyzer_failures.get(which, 0) + 1
    if count == 1:
        print(f"the {which} analyzer failed on {url}:", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
    elif count == 10 ** (len(str(count)) - 1):
        print(f"the {which} analyzer has failed on {count} pages (latest {url})", file=sys.stderr)


def pack(doc: ParsedDocument) -> Packed:
    """A parsed document as plain tuples (cheap to pickle and unpickle)."""
    p = doc.page
    # A Link is a tuple of its fields in this order: copying it makes the plain tuple.
    links = cast("_PackedLinks", tuple(map(tuple, p.links)))
    entities: _PackedEntities | None = None
    if doc.entities is not None:
        entities = cast(
            "_PackedEntities",
            (tuple(map(tuple, doc.entities.mentions)), tuple(map(tuple, doc.entities.relations))),
        )
    video: _PackedVideo | None = None
    if doc.video is not None:
        v = doc.video
        media = tuple((m.url, m.type, m.width, m.height, m.bitrate, m.source) for m in v.media)
        video = (v.video_class, media, v.manifests, v.embeds, v.signals, v.about)
    return (
        p.title,
        p.text,
        links,
        p.lang,
        p.canonical,
        p.noindex,
        p.nofollow,
        doc.digest,
        doc.encoding,
        doc.terms,
        entities,
        doc.extraction,
        video,
        p.main,
    )


def unpack(packed: Packed) -> ParsedDocument:
    """The inverse of :func:`pack`."""
    (
        title,
        text,
        links,
        lang,
        canonical,
        noindex,
        nofollow,
        digest,
        encoding,
        terms,
        found,
        ext,
        vid,
        main,
    ) = packed
    page = ParsedPage(
        title=title,
        text=text,
        links=tuple(map(Link._make, links)),
        lang=lang,
        canonical=canonical,
        noindex=noindex,
        nofollow=nofollow,
        main=main,
    )
    entities = None
    if found is not None:
        entities = PageEntities(
            tuple(map(EntityMention._make, found[0])),
            tuple(map(RelationMention._make, found[1])),
        )
    video = None
    if vid is not None:
        video_class, media, manifests, embeds, signals, about = vid
        video = VideoPage(
            url="",
            video_class=video_class,
            media=tuple(MediaUrl(*m) for m in media),
            manifests=manifests,
            embeds=embeds,
            signals=signals,
            about=about,
        )
    return ParsedDocument(page, digest, encoding, terms, entities, ext, video)


def request_frame(
    job: int, url: str, body: bytes | str, charset: str | None, hint: Hint | None = None
) -> tuple[bytes, bytes]:
    """A parse request as its head (lengths and pickled fields) and its body, to be written
    one after the other."""
    is_text = isinstance(body, str)
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    fields = pickle.dumps((job, url, charset, is_text, hint), protocol=pickle.HIGHEST_PROTOCOL)
    return REQUEST_HEAD.pack(len(fields), len(raw)) + fields, raw


def analyzer_frame(analyzer: TextAnalyzer) -> tuple[bytes, bytes]:
    """The request that gives a worker its text analyzer (head and body, as
    :func:`request_frame`)."""
    return request_frame(
        ANALYZER_JOB, "", pickle.dumps(analyzer, protocol=pickle.HIGHEST_PROTOCOL), None
    )


def entities_frame(analyzer: EntityAnalyzer) -> tuple[bytes, bytes]:
    """The request that gives a worker its entity analyzer (as :func:`analyzer_frame`)."""
    return request_frame(
        ENTITIES_JOB, "", pickle.dumps(analyzer, protocol=pickle.HIGHEST_PROTOCOL), None
    )


def parsers_frame(config: ParserConfig) -> tuple[bytes, bytes]:
    """The request that gives a worker the crawl's parser schemas (as :func:`analyzer_frame`)."""
    return request_frame(
        PARSERS_JOB, "", pickle.dumps(config, protocol=pickle.HIGHEST_PROTOCOL), None
    )


def budget_frame(cpu_seconds: float) -> tuple[bytes, bytes]:
    """The request that gives a worker its CPU budget per page (as :func:`analyzer_frame`)."""
    return request_frame(BUDGET_JOB, "", repr(float(cpu_seconds)).encode("ascii"), None)


def _load_analyzer(body: bytes | str) -> object | None:
    if isinstance(body, str):  # never sent as text: not an analyzer
        return None
    try:
        loaded: object = pickle.loads(body)  # noqa: S301 - our own parent wrote it
    except Exception:  # e.g. a module missing here: pages go on without terms or entities
        traceback.print_exc(file=sys.stderr)
        return None
    return loaded


def read_frame(
    stream: BinaryIO,
) -> tuple[int, str, bytes | str, str | None, Hint | None] | None:
    """The next (job, url, body, charset, hint) request on the stream, or None at its end."""
    head = stream.read(REQUEST_HEAD.size)
    if len(head) < REQUEST_HEAD.size:
        return None
    fields_size, body_size = REQUEST_HEAD.unpack(head)
    fields = stream.read(fields_size)
    body: bytes | str = stream.read(body_size)
    if len(fields) < fields_size or len(body) < body_size:
        return None
    job, url, charset, is_text, hint = pickle.loads(fields)  # noqa: S301 - our own parent
    if is_text:
        assert isinstance(body, bytes)
        body = body.decode("utf-8", "surrogatepass")
    return int(job), str(url), body, charset, hint


def write_frame(stream: BinaryIO, obj: object) -> None:
    """Write one length-prefixed pickle and flush."""
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(HEADER.pack(len(payload)) + payload)
    stream.flush()


def widen_pipe(fd: int) -> None:
    """Give a pipe 1 MiB of kernel buffer where the system allows (Linux); else leave it."""
    try:
        import fcntl  # noqa: PLC0415 - POSIX only

        fcntl.fcntl(fd, _F_SETPIPE_SZ, _PIPE_BYTES)
    except (ImportError, OSError):
        pass  # another system, or a lower limit: the default size works, with more waits


def serve(inp: BinaryIO, out: BinaryIO) -> None:
    """Answer parse requests until the input closes."""
    widen_pipe(inp.fileno())
    widen_pipe(out.fileno())
    analyzer: TextAnalyzer | None = None
    entity_analyzer: EntityAnalyzer | None = None
    parsers: ParserConfig | None = None
    budget = 0.0
    while (frame := read_frame(inp)) is not None:
        job, url, body, charset, hint = frame
        if job == BUDGET_JOB:
            budget = float(body) if CPU_LIMITED else 0.0
            continue
        if job == ANALYZER_JOB:
            analyzer = cast("TextAnalyzer | None", _load_analyzer(body))
            continue
        if job == ENTITIES_JOB:
            entity_analyzer = cast("EntityAnalyzer | None", _load_analyzer(body))
            continue
        if job == PARSERS_JOB:
            parsers = cast("ParserConfig | None", _load_analyzer(body))
            continue
        if budget:
            # CPU time, not wall time: on a loaded machine a page waits for the CPU without
            # using any, and only a page that burns this much of it is hostile. Past it the
            # kernel's SIGPROF ends this process (its default action, even inside C code),
            # and the parent fails that page alone.
            signal.setitimer(signal.ITIMER_PROF, budget)
        try:
            document = parse_body(
                body,
                url,
                charset=charset,
                analyzer=analyzer,
                entity_analyzer=entity_analyzer,
                parsers=parsers,
                hint=hint,
            )
            result: object = (job, True, pack(document))
            del document
        except (ValueError, TypeError, UnicodeError, RecursionError, MemoryError) as exc:
            result = (job, False, f"{type(exc).__name__}: {exc}")
        finally:
            if budget:
                signal.setitimer(signal.ITIMER_PROF, 0)
        del body, frame
        write_frame(out, result)


if __name__ == "__main__":
    # A Ctrl-C at the terminal reaches the whole process group: the crawl this process serves
    # decides when it ends (it closes the pipe), so the interrupt is its parent's to handle.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    serve(sys.stdin.buffer, sys.stdout.buffer)
