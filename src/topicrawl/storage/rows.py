"""Convert pages (with their packed links) and failures to database rows and back.

Strings are made storable on both databases before they are written
(:func:`~topicrawl.storage.storable.clean`: NUL becomes U+FFFD, a lone surrogate ``?``). JSON
is written ASCII-only.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from topicrawl.core.errors import StorageError
from topicrawl.core.models import (
    EMPTY_REASONS,
    ErrorKind,
    FetchFailure,
    MediaUrl,
    Page,
    PageVideo,
)
from topicrawl.storage.link_scores import encode_link_scores
from topicrawl.storage.outlinks import decode_links, encode_links
from topicrawl.storage.schema import failures, page_media, pages
from topicrawl.storage.search_index import has_cjk_text
from topicrawl.storage.storable import clean, clean_opt

__all__ = [
    "FAILURE_COLUMNS",
    "MEDIA_COLUMNS",
    "PAGE_COLUMNS",
    "ArchivedPage",
    "PendingPage",
    "PreparedBatch",
    "StoredRun",
    "clean",
    "decode_body",
    "failure_from_row",
    "failure_row",
    "headers_from_row",
    "host_of",
    "media_row",
    "page_from_row",
    "page_row",
    "pending_page",
    "prepare_batch",
    "run_from_row",
    "video_from_row",
]

# Column orders of the rows built here; the statements are compiled to take exactly these.
PAGE_COLUMNS: tuple[str, ...] = tuple(c.name for c in pages.columns if c.name != "id")
MEDIA_COLUMNS: tuple[str, ...] = tuple(c.name for c in page_media.columns if c.name != "id")
FAILURE_COLUMNS: tuple[str, ...] = tuple(c.name for c in failures.columns if c.name != "id")

_BODY_AT = PAGE_COLUMNS.index("body")
_RUN_AT = PAGE_COLUMNS.index("run_id")

# zlib level 1: about as small as level 6 on HTML, and several times faster on the write path.
_BODY_LEVEL = 1


@dataclass(frozen=True, slots=True)
class ArchivedPage:
    """A stored page with the raw response kept for it, when storage keeps bodies.

    ``body`` is the response body as fetched (after HTTP decompression), ``headers`` the
    response headers; both are ``None`` when the page was stored without them.
    """

    page: Page
    body: bytes | None
    headers: Mapping[str, str] | None


@dataclass(frozen=True, slots=True)
class StoredRun:
    """A crawl run as stored: ``config`` and ``stats`` are the JSON texts it was given."""

    id: int
    name: str
    started_at: float
    finished_at: float | None
    config: str
    stats: str | None


@dataclass(frozen=True, slots=True)
class PendingPage:
    """A page waiting in the write buffer, with its row (built by :func:`pending_page` when the
    page is saved) and, when bodies are kept, the raw body still to be compressed into it."""

    page: Page
    row: tuple[Any, ...]
    body: bytes | None = None


@dataclass(frozen=True, slots=True)
class PreparedBatch:
    """One transaction's rows: pages (in save order, one per URL), failures and the video
    rows of video pages (``page_media``, one per URL)."""

    page_rows: list[tuple[Any, ...]]
    failure_rows: list[tuple[Any, ...]]
    media_rows: list[tuple[Any, ...]] = field(default_factory=list)
    # (url, fetched_at) of the batch's pages that are not video pages: a media row an earlier
    # fetch left for one of them is deleted (when the database has any media rows at all).
    media_gone: list[tuple[Any, ...]] = field(default_factory=list)


# Built once: json.dumps with options builds a new encoder on every call.
_encode_json = json.JSONEncoder(separators=(",", ":")).encode


def _reasons_json(reasons: Mapping[str, float]) -> str:
    if not reasons:
        return "{}"
    return _encode_json({str(k): float(v) for k, v in reasons.items()})


def _redirects_json(redirects: Sequence[str]) -> str:
    return _encode_json(list(redirects)) if redirects else "[]"


def host_of(url: str) -> str:
    """A URL's host, and port when it has one (the frontier's politeness key for a canonical
    URL); the text after the scheme for a URL without ``://``."""
    start = url.find("://")
    start = 0 if start < 0 else start + 3
    end = url.find("/", start)
    return clean(url[start:] if end < 0 else url[start:end])


def page_row(
    page: Page, *, run_id: int, body: bytes | None, headers: Mapping[str, str] | None
) -> tuple[Any, ...]:
    """The ``pages`` row for ``page``, in :data:`PAGE_COLUMNS` order."""
    return (
        clean(page.url),
        clean(page.final_url),
        int(page.status),
        int(page.depth),
        clean_opt(page.parent_url),
        float(page.fetched_at),
        clean(page.content_type),
        clean_opt(page.encoding),
        clean(page.title),
        clean(page.text),
        clean_opt(page.lang),
        clean_opt(page.content_hash),
        clean_opt(page.duplicate_of),
        None if page.relevance is None else float(page.relevance),
        float(page.score),
        _reasons_json(page.reasons),
        float(page.elapsed),
        int(page.size),
        _redirects_json(page.redirects),
        bool(page.noindex),
        int(run_id),
        None if body is None else zlib.compress(body, _BODY_LEVEL),
        None if headers is None else _encode_json({str(k): str(v) for k, v in headers.items()}),
        encode_links(page.links),
        host_of(page.url),
        clean_opt(page.topic),
        encode_link_scores(page.link_scores, page.links),
        has_cjk_text(page.title, page.text),
    )


def pending_page(
    page: Page, *, run_id: int, body: bytes | None, headers: Mapping[str, str] | None
) -> PendingPage:
    """``page`` ready for the write buffer: its row built now, its body (if any) to be
    compressed into the row when the batch is prepared.

    Raises:
        StorageError: a field of ``page`` cannot be stored (not of its declared type).
    """
    try:
        row = page_row(page, run_id=run_id, body=None, headers=headers)
    except (TypeError, ValueError, AttributeError) as exc:
        raise StorageError(f"page {page.url!r} cannot be stored: {exc}") from exc
    return PendingPage(page=page, row=row, body=body)


def failure_row(failure: FetchFailure, *, run_id: int) -> tuple[Any, ...]:
    """The ``failures`` row for ``failure``, in :data:`FAILURE_COLUMNS` order."""
    return (
        clean(failure.url),
        str(failure.kind.value),
        clean(failure.message),
        None if failure.status is None else int(failure.status),
        float(failure.at),
        int(failure.depth),
        clean_opt(failure.parent_url),
        int(failure.attempts),
        int(run_id),
    )


def prepare_batch(
    entries: Iterable[PendingPage], failed: Iterable[tuple[FetchFailure, int]]
) -> PreparedBatch:
    """Build one transaction's rows. Cheap unless there are raw bodies to compress: storage
    then runs it in a worker thread (zlib lets other threads run while it compresses)."""
    by_url: dict[str, tuple[Any, ...]] = {}
    entries_list = list(entries)
    for entry in entries_list:
        row = entry.row
        if entry.body is not None:
            body = zlib.compress(entry.body, _BODY_LEVEL)
            row = (*row[:_BODY_AT], body, *row[_BODY_AT + 1 :])
        # Two URLs that differ only in unstorable characters become one row; the later wins.
        by_url[row[0]] = row
    # One row per URL in a statement: PostgreSQL refuses to upsert a row twice in one.
    failed_by_url: dict[str, tuple[Any, ...]] = {}
    for failure, run_id in failed:
        failed_row = failure_row(failure, run_id=run_id)
        failed_by_url[failed_row[0]] = failed_row
    media_by_url: dict[str, tuple[Any, ...]] = {}
    gone: dict[str, tuple[Any, ...]] = {}
    for entry in entries_list:
        video_row = media_row(entry)
        url = entry.row[0]
        if video_row is not None:
            media_by_url[url] = video_row
            gone.pop(url, None)
        else:
            gone[url] = (url, float(entry.page.fetched_at))
            media_by_url.pop(url, None)
    return PreparedBatch(
        page_rows=list(by_url.values()),
        failure_rows=list(failed_by_url.values()),
        media_rows=list(media_by_url.values()),
        media_gone=list(gone.values()),
    )


def media_row(entry: PendingPage) -> tuple[Any, ...] | None:
    """The ``page_media`` row of a pending video page (None for other pages), in
    :data:`MEDIA_COLUMNS` order."""
    video = entry.page.video
    if video is None:
        return None
    row = entry.row
    return (
        row[0],  # the page row's cleaned URL
        clean(video.video_class),
        _encode_json([m.as_dict() for m in video.media]),
        clean(video.resolver),
        _encode_json(list(video.errors)),
        float(entry.page.fetched_at),
        row[_RUN_AT],
    )


def video_from_row(row: Mapping[Any, Any]) -> PageVideo:
    """The :class:`PageVideo` stored in a ``page_media`` row mapping."""
    media = tuple(MediaUrl(**item) for item in json.loads(row["media"] or "[]"))
    return PageVideo(
        str(row["video_class"]), media, str(row["resolver"]), tuple(json.loads(row["errors"]))
    )


def decode_body(blob: bytes | None) -> bytes | None:
    """The raw body from its stored (compressed) form.

    Raises:
        StorageError: the stored body is not valid zlib data.
    """
    if blob is None:
        return None
    try:
        return zlib.decompress(blob)
    except zlib.error as exc:
        raise StorageError(f"a stored page body is damaged: {exc}") from exc


def _reasons(raw: str) -> Mapping[str, float]:
    loaded = json.loads(raw) if raw else {}
    return MappingProxyType(loaded) if loaded else EMPTY_REASONS


def page_from_row(row: Mapping[Any, Any], *, with_links: bool = False) -> Page:
    """The :class:`Page` stored in ``row`` (a ``pages`` row mapping; it must hold the
    ``links`` column when ``with_links``).

    Raises:
        StorageError: the row's packed links are damaged.
    """
    return Page(
        url=row["url"],
        final_url=row["final_url"],
        status=row["status"],
        depth=row["depth"],
        fetched_at=row["fetched_at"],
        content_type=row["content_type"],
        title=row["title"],
        text=row["text"],
        links=decode_links(row["links"]) if with_links else (),
        lang=row["lang"],
        parent_url=row["parent_url"],
        content_hash=row["content_hash"],
        duplicate_of=row["duplicate_of"],
        relevance=row["relevance"],
        score=row["score"],
        reasons=_reasons(row["reasons"]),
        elapsed=row["elapsed"],
        size=row["size"],
        encoding=row["encoding"],
        redirects=tuple(json.loads(row["redirects"])) if row["redirects"] else (),
        noindex=bool(row["noindex"]),
        topic=row.get("topic"),
    )


def headers_from_row(row: Mapping[Any, Any]) -> Mapping[str, str] | None:
    """The stored response headers of a ``pages`` row, if any."""
    raw = row["headers"]
    return None if raw is None else MappingProxyType(json.loads(raw))


def failure_from_row(row: Mapping[Any, Any]) -> FetchFailure:
    """The :class:`FetchFailure` stored in ``row`` (a ``failures`` row mapping).

    Raises:
        StorageError: the row's kind is not an :class:`ErrorKind`.
    """
    try:
        kind = ErrorKind(row["kind"])
    except ValueError as exc:
        raise StorageError(
            f"failure {row['id']} for {row['url']} has unknown kind {row['kind']!r}"
        ) from exc
    return FetchFailure(
        url=row["url"],
        kind=kind,
        message=row["message"],
        at=row["at"],
        status=row["status"],
        depth=row["depth"],
        parent_url=row["parent_url"],
        attempts=row["attempts"],
    )


def run_from_row(row: Mapping[Any, Any]) -> StoredRun:
    """The :class:`StoredRun` stored in ``row`` (a ``runs`` row mapping)."""
    return StoredRun(
        id=row["id"],
        name=row["name"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        config=row["config"],
        stats=row["stats"],
    )
