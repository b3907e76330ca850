"""A parse worker process: reads (id, html, url) frames on stdin, writes results on stdout.

Run by :class:`topicrawl.engine.parsing.PageParser` as ``python -m topicrawl.engine.parse_worker``.
Frames are a 4-byte big-endian length and a pickle. The pipe only ever carries data this
crawler's own parent process wrote, so unpickling it is safe.
"""

from __future__ import annotations

import pickle
import struct
import sys
from typing import BinaryIO

from topicrawl.engine.parsing import parse_document

__all__ = ["read_frame", "serve", "write_frame"]

HEADER = struct.Struct(">I")


def read_frame(stream: BinaryIO) -> tuple[int, str, str] | None:
    """The next (job, html, url) request on the stream, or None at end of stream."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    (size,) = HEADER.unpack(header)
    payload = stream.read(size)
    if len(payload) < size:
        return None
    job, html, url = pickle.loads(payload)  # noqa: S301 - written by our own parent process
    return int(job), str(html), str(url)


def write_frame(stream: BinaryIO, obj: object) -> None:
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(HEADER.pack(len(payload)) + payload)
    stream.flush()


def serve(inp: BinaryIO, out: BinaryIO) -> None:
    """Answer parse requests until the input closes."""
    while (frame := read_frame(inp)) is not None:
        job, html, url = frame
        try:
            result: object = (job, True, parse_document(html, url))
        except (ValueError, TypeError, UnicodeError, RecursionError, MemoryError) as exc:
            result = (job, False, f"{type(exc).__name__}: {exc}")
        write_frame(out, result)


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
