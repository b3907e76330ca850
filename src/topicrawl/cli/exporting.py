"""``topicrawl export``: stream stored pages to JSONL, CSV or WARC."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import BinaryIO, TextIO

from topicrawl.core.errors import ConfigError
from topicrawl.engine.build import sqlite_path
from topicrawl.storage import SqlStorage, export_csv, export_jsonl, export_warc

__all__ = ["run_export"]

FORMATS = ("jsonl", "csv", "warc")


async def run_export(*, db: str, fmt: str, output: Path | None) -> int:
    """Export every stored page of ``db`` in fetch order; returns the number written.

    Raises:
        ConfigError: unknown format, or the database file does not exist.
    """
    if fmt not in FORMATS:
        raise ConfigError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    path = sqlite_path(db)
    if path is not None and not path.is_file():
        raise ConfigError(f"database {path} does not exist")
    storage = SqlStorage(db)
    await storage.open()
    try:
        with contextlib.ExitStack() as stack:
            if fmt == "warc":
                binary: BinaryIO = (
                    stack.enter_context(output.open("wb")) if output else sys.stdout.buffer
                )
                return await export_warc(storage, binary)
            text: TextIO = (
                stack.enter_context(output.open("w", encoding="utf-8", newline=""))
                if output
                else sys.stdout
            )
            if fmt == "csv":
                return await export_csv(storage, text)
            return await export_jsonl(storage, text)
    finally:
        await storage.close()
