"""Convert pages, links and failures to database rows and back.

Strings are made storable on both databases before they are written: NUL characters (which
PostgreSQL ``TEXT`` cannot hold) become U+FFFD, as HTML parsers do, and lone surrogates (which
neither database can encode as UTF-8) become ``?``. JSON is written ASCII-only.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from topicrawl.core.errors import StorageError
from topicrawl.core.models import EMPTY_REASONS, ErrorKind, FetchFailure, Link, Page
from topicrawl.storage.schema import failures, links, pages

__all__ = [
    "FAILURE_COLUMNS",
    "LINK_COLUMNS",
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
    "link_from_row",
    "link_rows",
    "page_from_row",
    "page_row",
    "prepare_batch",
    "run_from_row",
]

# Column orders of the rows built here; the statements are compiled to take exactly these.
PAGE_COLUMNS: tuple[str, ...] = tuple(c.name for c in pages.columns if c.name != "id")
LINK_COLUMNS: tuple[str, ...] = tuple(c.name for c in links.columns)
FAILURE_COLUMNS: tuple[str, ...] = tuple(c.name for c in failures.columns if c.name != "id")

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
    """A page waiting in the write buffer, with its run and optional raw response."""

    page: Page
    run_id: int
    body: bytes | None
    headers: Mapping[str, str] | None


@dataclass(frozen=True, slots=True)
class PreparedBatch:
    """One transaction's rows: pages (in save order), each page's links, and failures.

    ``links`` pairs a page's stored URL with its link rows, which lack the leading ``page_id``
    (known only once the page row is written).
    """

    page_rows: list[tuple[Any, ...]]
    urls: list[str]
    links: list[tuple[str, list[tuple[Any, ...]]]]
    failure_rows: list[tuple[Any, ...]]


def clean(value: str) -> str:
    """``value`` made storable as UTF-8 text in SQLite and PostgreSQL alike."""
    if "\x00" in value:
        value = value.replace("\x00", "\ufffd")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            value = value.encode("utf-8", "replace").decode("utf-8")
    return value


def _clean_opt(value: str | None) -> str | None:
    return None if value is None else clean(value)


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def page_row(
    page: Page, *, run_id: int, body: bytes | None, headers: Mapping[str, str] | None
) -> tuple[Any, ...]:
    """The ``pages`` row for ``page``, in :data:`PAGE_COLUMNS` order."""
    return (
        clean(page.url),
        clean(page.final_url),
        int(page.status),
        int(page.depth),
        _clean_opt(page.parent_url),
        float(page.fetched_at),
        clean(page.content_type),
        _clean_opt(page.encoding),
        clean(page.title),
        clean(page.text),
        _clean_opt(page.lang),
        _clean_opt(page.content_hash),
        _clean_opt(page.duplicate_of),
        None if page.relevance is None else float(page.relevance),
        float(page.score),
        _json({str(k): float(v) for k, v in page.reasons.items()}),
        float(page.elapsed),
        int(page.size),
        _json(list(page.redirects)),
        bool(page.noindex),
        int(run_id),
        None if body is None else zlib.compress(body, _BODY_LEVEL),
        None if headers is None else _json({str(k): str(v) for k, v in headers.items()}),
    )


def link_rows(page_links: Sequence[Link]) -> list[tuple[Any, ...]]:
    """The ``links`` rows of a page, without the leading ``page_id``."""
    rows: list[tuple[Any, ...]] = []
    for position, link in enumerate(page_links):
        url, anchor, block_text = link.url, link.anchor, link.block_text
        # One check for the three strings: almost every link is plain ASCII without NULs.
        joined = url + anchor + block_text
        if not joined.isascii() or "\x00" in joined:
            url, anchor, block_text = clean(url), clean(anchor), clean(block_text)
        rows.append((position, url, anchor, int(link.block), block_text, bool(link.nofollow)))
    return rows


def failure_row(failure: FetchFailure, *, run_id: int) -> tuple[Any, ...]:
    """The ``failures`` row for ``failure``, in :data:`FAILURE_COLUMNS` order."""
    return (
        clean(failure.url),
        str(failure.kind.value),
        clean(failure.message),
        None if failure.status is None else int(failure.status),
        float(failure.at),
        int(failure.depth),
        _clean_opt(failure.parent_url),
        int(failure.attempts),
        int(run_id),
    )


def prepare_batch(
    entries: Iterable[PendingPage],
    failed: Iterable[tuple[FetchFailure, int]],
    *,
    keep_body: bool,
) -> PreparedBatch:
    """Build one transaction's rows. CPU-bound: storage runs it in a worker thread."""
    by_url: dict[str, tuple[tuple[Any, ...], list[tuple[Any, ...]]]] = {}
    for entry in entries:
        row = page_row(
            entry.page,
            run_id=entry.run_id,
            body=entry.body if keep_body else None,
            headers=entry.headers if keep_body else None,
        )
        # Two URLs that differ only in unstorable characters become one row; the later wins.
        by_url[row[0]] = (row, link_rows(entry.page.links))
    return PreparedBatch(
        page_rows=[row for row, _ in by_url.values()],
        urls=list(by_url),
        links=[(url, rows) for url, (_, rows) in by_url.items() if rows],
        failure_rows=[failure_row(failure, run_id=run_id) for failure, run_id in failed],
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


def page_from_row(row: Mapping[Any, Any], page_links: tuple[Link, ...] = ()) -> Page:
    """The :class:`Page` stored in ``row`` (a ``pages`` row mapping)."""
    return Page(
        url=row["url"],
        final_url=row["final_url"],
        status=row["status"],
        depth=row["depth"],
        fetched_at=row["fetched_at"],
        content_type=row["content_type"],
        title=row["title"],
        text=row["text"],
        links=page_links,
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
    )


def headers_from_row(row: Mapping[Any, Any]) -> Mapping[str, str] | None:
    """The stored response headers of a ``pages`` row, if any."""
    raw = row["headers"]
    return None if raw is None else MappingProxyType(json.loads(raw))


def link_from_row(row: Mapping[Any, Any]) -> Link:
    """The :class:`Link` stored in ``row`` (a ``links`` row mapping)."""
    return Link(
        url=row["url"],
        anchor=row["anchor"],
        block=row["block"],
        block_text=row["block_text"],
        nofollow=bool(row["nofollow"]),
    )


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
