"""Export stored pages as JSON Lines, CSV or WARC (one record per page, in fetch order), and
stored failures as JSON Lines or CSV (one record per failed URL).

Every page format carries the same fields (:data:`EXPORT_FIELDS`), every failure format
:data:`FAILURE_FIELDS`; times are ISO 8601 in UTC. A video page's ``video_class`` (``play`` or
``video``; empty otherwise) and ``media`` (JSONL: objects with url, type, width, height,
bitrate, source; CSV: the URLs separated by spaces) come from ``page_media``.

CSV cells are escaped against formula injection as OWASP advises: a text cell that starts
with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return (a hostile page's title, a URL)
gets a leading ``'``, so that a spreadsheet shows it as text instead of running it. Numbers
are written as they are. JSONL is never escaped: use it to get values exactly as stored.

Pages with a record extracted by the parser library (``page_records``) carry it: in JSONL as
a ``record`` object, in CSV as one ``record.<field>`` column per field any record has (lists
joined with "; "), and the method it came from as ``record_method``: ``partial:<method>``
flags a record stored with only some of its fields. The records and their methods are handed
in by the caller (``records`` and ``methods``, by URL).
"""

from __future__ import annotations

import csv
import http
import io
import json
from collections.abc import AsyncIterator, Iterable, Mapping
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, Any, BinaryIO, Protocol, TextIO, runtime_checkable

from topicrawl.core.models import FetchFailure, Page
from topicrawl.core.protocols import Storage
from topicrawl.storage.rows import ArchivedPage

if TYPE_CHECKING:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

__all__ = [
    "EXPORT_FIELDS",
    "FAILURE_FIELDS",
    "ArchiveSource",
    "csv_cell",
    "export_csv",
    "export_failures_csv",
    "export_failures_jsonl",
    "export_jsonl",
    "export_warc",
    "failure_record",
    "iso_utc",
    "page_record",
]

EXPORT_FIELDS: tuple[str, ...] = (
    "url",
    "final_url",
    "status",
    "fetched_at",
    "title",
    "content_type",
    "lang",
    "relevance",
    "score",
    "depth",
    "parent_url",
    "content_hash",
    "duplicate_of",
    "size",
    "video_class",
    "media",
)

FAILURE_FIELDS: tuple[str, ...] = (
    "url",
    "kind",
    "status",
    "message",
    "at",
    "depth",
    "parent_url",
    "attempts",
)

# What a spreadsheet reads as the start of a formula (OWASP, CSV injection).
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

# Response headers that described the body on the wire: the stored body is already decoded
# and de-chunked, so they would misdescribe it in the archive.
_WIRE_HEADERS = frozenset({"content-encoding", "transfer-encoding", "content-length"})
_WARC_PREFIX = "WARC-Topicrawl-"


@runtime_checkable
class ArchiveSource(Protocol):
    """A storage that can hand back pages with their kept raw bodies and headers."""

    def iter_archived(self) -> AsyncIterator[ArchivedPage]: ...


def iso_utc(timestamp: float) -> str:
    """``timestamp`` (seconds since the epoch) as ISO 8601 in UTC, e.g. ``2024-05-01T12:00:00Z``."""
    moment = datetime.fromtimestamp(timestamp, tz=UTC)
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def page_record(page: Page) -> dict[str, Any]:
    """The exported fields of ``page``, in :data:`EXPORT_FIELDS` order."""
    return {
        "url": page.url,
        "final_url": page.final_url,
        "status": page.status,
        "fetched_at": iso_utc(page.fetched_at),
        "title": page.title,
        "content_type": page.content_type,
        "lang": page.lang,
        "relevance": page.relevance,
        "score": page.score,
        "depth": page.depth,
        "parent_url": page.parent_url,
        "content_hash": page.content_hash,
        "duplicate_of": page.duplicate_of,
        "size": page.size,
        "video_class": page.video.video_class if page.video is not None else None,
        "media": [m.as_dict() for m in page.video.media] if page.video is not None else [],
    }


def failure_record(failure: FetchFailure) -> dict[str, Any]:
    """The exported fields of ``failure``, in :data:`FAILURE_FIELDS` order."""
    return {
        "url": failure.url,
        "kind": failure.kind.value,
        "status": failure.status,
        "message": failure.message,
        "at": iso_utc(failure.at),
        "depth": failure.depth,
        "parent_url": failure.parent_url,
        "attempts": failure.attempts,
    }


def csv_cell(value: object) -> object:
    """``value`` safe to open in a spreadsheet: text that would start a formula gets a
    leading ``'`` (OWASP's advice against CSV injection); other values are unchanged."""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def _csv_writer(out: TextIO, fields: tuple[str, ...]) -> csv.DictWriter[str]:
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\r\n")
    writer.writeheader()
    return writer


def _csv_row(record: Mapping[str, Any]) -> dict[str, Any]:
    return {name: csv_cell(value) for name, value in record.items()}


Records = Mapping[str, Mapping[str, Any]]
"""Parser-library records by page URL."""


async def export_jsonl(
    storage: Storage,
    out: TextIO,
    *,
    with_text: bool = False,
    records: Records | None = None,
    methods: Mapping[str, str] | None = None,
) -> int:
    """Write one JSON object per page and line; return how many were written.

    Args:
        with_text: also write each page's extracted ``text``.
        records: the pages' extracted records by URL (each page gets a ``record`` field).
    """
    written = 0
    async for page in storage.iter_pages():
        record = page_record(page)
        if with_text:
            record["text"] = page.text
        if records is not None:
            record["record"] = records.get(page.url)
            record["record_method"] = (methods or {}).get(page.url)
        out.write(json.dumps(record, ensure_ascii=False))
        out.write("\n")
        written += 1
    return written


async def export_csv(
    storage: Storage,
    out: TextIO,
    *,
    records: Records | None = None,
    methods: Mapping[str, str] | None = None,
) -> int:
    """Write a header row and one row per page; return how many pages were written.

    Empty cells stand for missing values (``None``); text cells are escaped with
    :func:`csv_cell`. Open ``out`` with ``newline=""``. With ``records``, a column per
    record field follows (``record.<field>``).
    """
    names: dict[str, None] = {}
    for fields in (records or {}).values():
        names.update(dict.fromkeys(fields))
    columns = tuple(f"record.{name}" for name in names)
    method = ("record_method",) if records is not None else ()
    writer = _csv_writer(out, EXPORT_FIELDS + method + columns)
    written = 0
    async for page in storage.iter_pages():
        row = page_record(page)
        # one cell: the media URLs separated by spaces (JSONL has their types and sizes)
        row["media"] = " ".join(item["url"] for item in row["media"])
        found = records.get(page.url) if records is not None else None
        if method:
            row["record_method"] = (methods or {}).get(page.url)
        for name, column in zip(names, columns, strict=True):
            value = found.get(name) if found is not None else None
            row[column] = "; ".join(map(str, value)) if isinstance(value, list) else value
        writer.writerow(_csv_row(row))
        written += 1
    return written


async def export_failures_jsonl(storage: Storage, out: TextIO) -> int:
    """Write one JSON object per stored failure and line; return how many were written."""
    written = 0
    async for failure in storage.iter_failures():
        out.write(json.dumps(failure_record(failure), ensure_ascii=False))
        out.write("\n")
        written += 1
    return written


async def export_failures_csv(storage: Storage, out: TextIO) -> int:
    """Write a header row and one row per stored failure (escaped as :func:`export_csv`
    does); return how many were written."""
    writer = _csv_writer(out, FAILURE_FIELDS)
    written = 0
    async for failure in storage.iter_failures():
        writer.writerow(_csv_row(failure_record(failure)))
        written += 1
    return written


async def export_warc(storage: Storage, out: BinaryIO, *, gzip: bool = True) -> int:
    """Write a WARC/1.1 file with one record per page; return how many were written.

    A page whose raw body and headers were kept (``SqlStorage(keep_body=True)``) becomes a
    ``response`` record holding the HTTP status line, the headers and the body as fetched, with
    ``Content-Encoding``/``Transfer-Encoding`` dropped and ``Content-Length`` set, since the
    body was stored after decompression. Any other page becomes a ``resource`` record of its
    *extracted text* (``text/plain; charset=utf-8``), not the original bytes: such an archive
    documents what was crawled but cannot be replayed as the original site.

    Every record carries the page's metadata in ``WARC-Topicrawl-*`` headers (requested URL,
    status, depth, parent URL, relevance, title, content hash, duplicate-of). The record's
    ``WARC-Target-URI`` is the final URL after redirects; ``WARC-Date`` is the fetch time.
    """
    from warcio.warcwriter import WARCWriter  # noqa: PLC0415 - 7 MB a crawl never needs

    writer = WARCWriter(out, gzip=gzip, warc_version="1.1")
    written = 0
    async for item in _archived(storage):
        writer.write_record(_warc_record(writer, item))
        written += 1
    return written


async def _archived(storage: Storage) -> AsyncIterator[ArchivedPage]:
    if isinstance(storage, ArchiveSource):
        async for item in storage.iter_archived():
            yield item
        return
    async for page in storage.iter_pages():
        yield ArchivedPage(page=page, body=None, headers=None)


def _header_value(value: object) -> str:
    """A WARC header value on one line (titles can hold any characters)."""
    return " ".join(str(value).split())


def _warc_headers(page: Page) -> dict[str, str]:
    headers = {
        "WARC-Date": iso_utc(page.fetched_at),
        f"{_WARC_PREFIX}Requested-URI": page.url,
        f"{_WARC_PREFIX}Status": str(page.status),
        f"{_WARC_PREFIX}Depth": str(page.depth),
        f"{_WARC_PREFIX}Title": page.title,
        f"{_WARC_PREFIX}Content-Type": page.content_type,
    }
    optional = {
        "Parent-URI": page.parent_url,
        "Relevance": page.relevance,
        "Content-Hash": page.content_hash,
        "Duplicate-Of": page.duplicate_of,
    }
    headers.update({_WARC_PREFIX + k: str(v) for k, v in optional.items() if v is not None})
    return {name: _header_value(value) for name, value in headers.items()}


def _http_headers(status: int, headers: Mapping[str, str], length: int) -> StatusAndHeaders:
    try:
        reason = http.HTTPStatus(status).phrase
    except ValueError:
        reason = "Unknown"
    kept: Iterable[tuple[str, str]] = (
        (_header_value(name), _header_value(value))
        for name, value in headers.items()
        if name.lower() not in _WIRE_HEADERS
    )
    from warcio.statusandheaders import StatusAndHeaders  # noqa: PLC0415

    return StatusAndHeaders(
        f"{status} {reason}",
        [*kept, ("Content-Length", str(length))],
        protocol="HTTP/1.1",
    )


def _warc_record(writer: WARCWriter, item: ArchivedPage) -> Any:
    page = item.page
    target = page.final_url or page.url
    warc_headers = _warc_headers(page)
    payload: IO[bytes]
    if item.body is not None:
        headers = item.headers or {"Content-Type": page.content_type}
        payload = io.BytesIO(item.body)
        return writer.create_warc_record(
            target,
            "response",
            payload=payload,
            length=len(item.body),
            http_headers=_http_headers(page.status, headers, len(item.body)),
            warc_headers_dict=warc_headers,
        )
    data = page.text.encode("utf-8", "replace")
    payload = io.BytesIO(data)
    return writer.create_warc_record(
        target,
        "resource",
        payload=payload,
        length=len(data),
        warc_content_type="text/plain; charset=utf-8",
        warc_headers_dict=warc_headers,
    )
