"""``topicrawl export``: stream stored pages (JSONL, CSV or WARC) or failures (JSONL, CSV).

The database is opened read-only, so a crawl on read-only media, or one still running, can be
exported. The output is written to a temporary file beside ``--output`` and moved into place
only when complete: a failed export never leaves a truncated file or clobbers an older one.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import IO, Any, BinaryIO, TextIO, cast

from topicrawl.core.errors import ConfigError, StorageError, TopicrawlError
from topicrawl.core.protocols import Storage
from topicrawl.engine.build import sqlite_path
from topicrawl.storage import (
    SqlStorage,
    export_csv,
    export_failures_csv,
    export_failures_jsonl,
    export_jsonl,
    export_warc,
)

__all__ = ["FORMATS", "WHAT", "run_export"]

WHAT = ("pages", "failures")
FORMATS: dict[str, tuple[str, ...]] = {
    "pages": ("jsonl", "csv", "warc"),
    "failures": ("jsonl", "csv"),
}

_TextWriter = Callable[[Storage, TextIO], Awaitable[int]]
_TEXT_WRITERS: dict[tuple[str, str], _TextWriter] = {
    ("pages", "jsonl"): export_jsonl,
    ("pages", "csv"): export_csv,
    ("failures", "jsonl"): export_failures_jsonl,
    ("failures", "csv"): export_failures_csv,
}


def _check(db: str, what: str, fmt: str) -> None:
    if what not in FORMATS:
        raise ConfigError(f"unknown --what {what!r}; choose one of {', '.join(WHAT)}")
    if fmt not in FORMATS[what]:
        raise ConfigError(
            f"{what} cannot be exported as {fmt!r}; choose one of {', '.join(FORMATS[what])}"
        )
    path = sqlite_path(db)
    if path is not None and not path.is_file():
        raise ConfigError(f"database {path} does not exist")


def _check_output(output: Path) -> None:
    """Refuse an --output that cannot be written, before reading anything."""
    if output.is_dir():
        raise ConfigError(f"--output {output} is a directory: give a file path")
    parent = output.parent
    if not parent.is_dir():
        raise ConfigError(f"cannot write --output {output}: directory {parent} does not exist")


@contextlib.contextmanager
def _replacing(output: Path, binary: bool) -> Iterator[IO[bytes] | IO[str]]:
    """A temporary file beside ``output`` that replaces it once the block ends without error.

    Raises:
        ConfigError: the directory cannot be written (read-only, no permission).
        TopicrawlError: writing failed part way (disk full); ``output`` is left as it was.
    """
    try:
        fd, name = tempfile.mkstemp(prefix=f".{output.name}.", suffix=".part", dir=output.parent)
    except OSError as exc:
        raise ConfigError(f"cannot write --output {output}: {exc.strerror or exc}") from exc
    temporary = Path(name)
    try:
        handle: IO[bytes] | IO[str] = (
            os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="")
        )
        with handle:
            yield handle
        # mkstemp makes the file private (0600); give it the mode a new file would get.
        os.chmod(temporary, _new_file_mode(output))
        os.replace(temporary, output)
    except OSError as exc:
        raise TopicrawlError(
            f"writing --output {output} failed: {exc.strerror or exc}; it was left as it was"
        ) from exc
    finally:
        temporary.unlink(missing_ok=True)


def _new_file_mode(output: Path) -> int:
    if output.exists():
        return output.stat().st_mode & 0o7777
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


async def run_export(*, db: str, fmt: str, output: Path | None, what: str = "pages") -> int:
    """Export every stored page (in fetch order) or failure of ``db``; returns how many.

    Raises:
        ConfigError: unknown format or kind of record, the database does not exist, or
            ``output`` cannot be written.
        StorageError: the database cannot be read.
    """
    _check(db, what, fmt)
    if output is not None:
        _check_output(output)
    storage = SqlStorage(db, read_only=True)
    await storage.open()
    try:
        if output is None:
            stream: IO[bytes] | IO[str] = sys.stdout.buffer if fmt == "warc" else sys.stdout
            return await _write(storage, what, fmt, stream, db)
        with _replacing(output, binary=fmt == "warc") as handle:
            return await _write(storage, what, fmt, handle, db)
    finally:
        await storage.close()


async def _write(
    storage: SqlStorage, what: str, fmt: str, out: IO[bytes] | IO[str], db: str
) -> int:
    if fmt == "warc":
        return await export_warc(storage, cast(BinaryIO, out))
    if what == "pages":
        records, methods = await _records(db)
        if records:
            text = cast(TextIO, out)
            if fmt == "jsonl":
                return await export_jsonl(storage, text, records=records, methods=methods)
            return await export_csv(storage, text, records=records, methods=methods)
    return await _TEXT_WRITERS[what, fmt](storage, cast(TextIO, out))


async def _records(db: str) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """The parser library's records by URL, partial ones included, and the method of each
    (``partial:<method>`` flags a partial one); none for a database without its tables."""
    from topicrawl.storage.parsers import SqlParserStore  # noqa: PLC0415

    async with SqlParserStore(db, read_only=True) as store:
        try:
            return await store.records(partial=True), await store.methods()
        except StorageError as exc:
            if "page_records" in str(exc):
                return {}, {}  # a database from before the parser library
            raise
