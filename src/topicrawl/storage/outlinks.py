"""A page's outgoing links packed into one value of its ``pages`` row, and unpacked again.

Storing each link as a row cost far more than the page itself (a B-tree insert per link and
per index, the block text repeated on every link); one value per page costs one column write.

The stored value is one byte naming the codec, then the data: ``p`` for the payload as is,
``z`` for the payload zlib-compressed (level 1). Only payloads of 256 KiB or more (thousands of
links, long block texts) are compressed: below that, compressing costs more time than writing
the bytes it saves (zlib took ~40 % of a batch's preparation at 50 links a page).

The payload is UTF-8 text whose fields are joined by NUL (``"\\0"``), which no stored string
contains (storage turns NUL into U+FFFD in every string it writes, see
:func:`topicrawl.storage.storable.clean`)::

    "1"                       format version
    n                         number of links (decimal)
    k                         number of distinct (block, block text) pairs (decimal)
    m                         number of nofollow links (decimal)
    m positions               decimal, of the nofollow links, ascending
    k block numbers           decimal, one field each
    k block texts             each stored once, however many links share it
    n block refs              decimal index of each link's (block, block text) pair
    n urls, then n anchors

Packing is a few comprehensions and one ``join`` (no JSON escaping), about a microsecond a link
on a busy machine; unpacking is one ``split``.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

from topicrawl.core.errors import StorageError
from topicrawl.core.models import Link
from topicrawl.storage.storable import clean

__all__ = ["decode_links", "encode_links"]

_VERSION = "1"
_SEP = "\x00"
_ZLIB = b"z"
_PLAIN = b"p"
_COMPRESS_FROM = 256 * 1024
_LEVEL = 1


def encode_links(links: Sequence[Link]) -> bytes | None:
    """The stored value of a page's links (``None`` for none).

    Strings holding NUL or a lone surrogate are stored as
    :func:`~topicrawl.storage.storable.clean` makes them.

    Raises:
        TypeError, ValueError: a link's fields are not of their declared types.
    """
    if not links:
        return None
    payload = _payload(links)
    try:
        data = payload.encode("utf-8") if payload is not None else None
    except UnicodeEncodeError:
        data = None
    if data is None:
        # Rare: a string held NUL or a lone surrogate. Clean every string and pack again.
        cleaned = [
            Link(
                clean(link.url),
                clean(link.anchor),
                link.block,
                clean(link.block_text),
                link.nofollow,
            )
            for link in links
        ]
        payload = _payload(cleaned)
        if payload is None:
            raise ValueError("cleaned link strings still contain NUL")
        data = payload.encode("utf-8")
    if len(data) < _COMPRESS_FROM:
        return _PLAIN + data
    return _ZLIB + zlib.compress(data, _LEVEL)


def _payload(links: Sequence[Link]) -> str | None:
    """The NUL-joined payload, or ``None`` when a string itself contains NUL."""
    pairs = [(link.block, link.block_text) for link in links]
    ref_of = {pair: str(ref) for ref, pair in enumerate(dict.fromkeys(pairs))}
    nofollow = [str(position) for position, link in enumerate(links) if link.nofollow]
    fields = [_VERSION, str(len(links)), str(len(ref_of)), str(len(nofollow)), *nofollow]
    fields += [str(int(block)) for block, _ in ref_of]
    fields += [text for _, text in ref_of]
    fields += map(ref_of.__getitem__, pairs)
    fields += [link.url for link in links]
    fields += [link.anchor for link in links]
    payload = _SEP.join(fields)
    if payload.count(_SEP) != len(fields) - 1:
        return None
    return payload


def decode_links(value: bytes | None) -> tuple[Link, ...]:
    """The links packed by :func:`encode_links`, in the order they were saved.

    Raises:
        StorageError: the value is damaged or of an unknown format.
    """
    if value is None:
        return ()
    try:
        return _unpack(value)
    except (zlib.error, UnicodeDecodeError, ValueError, IndexError) as exc:
        raise StorageError(f"a stored page's links are damaged: {exc}") from exc


def _unpack(value: bytes) -> tuple[Link, ...]:
    codec, data = value[:1], value[1:]
    if codec == _ZLIB:
        data = zlib.decompress(data)
    elif codec != _PLAIN:
        raise ValueError(f"unknown links codec {codec!r}")
    fields = data.decode("utf-8").split(_SEP)
    if fields[0] != _VERSION:
        raise ValueError(f"unknown links format {fields[0]!r}")
    count, kinds, flagged = int(fields[1]), int(fields[2]), int(fields[3])
    if len(fields) != 4 + flagged + 2 * kinds + 3 * count:
        raise ValueError(f"{len(fields)} fields do not make {count} links over {kinds} blocks")
    at = 4 + flagged
    nofollow = [False] * count
    for position in map(int, fields[4:at]):
        if not 0 <= position < count:
            raise ValueError(f"nofollow position {position} is not that of a link")
        nofollow[position] = True
    blocks = list(map(int, fields[at : at + kinds]))
    texts = fields[at + kinds : at + 2 * kinds]
    at += 2 * kinds
    refs = list(map(int, fields[at : at + count]))
    if refs and not 0 <= min(refs) <= max(refs) < kinds:
        raise ValueError("a link refers to a block that is not stored")
    at += count
    return tuple(
        map(
            Link,
            fields[at : at + count],
            fields[at + count : at + 2 * count],
            map(blocks.__getitem__, refs),
            map(texts.__getitem__, refs),
            nofollow,
        )
    )
