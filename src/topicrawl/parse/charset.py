"""Decoding fetched bodies to text: BOM, declared charset, <meta>, then detection; never raises."""

from __future__ import annotations

import codecs
import enum
import functools
import re
from dataclasses import dataclass

import charset_normalizer

__all__ = ["CharsetSource", "DecodedText", "decode_body", "normalize_charset"]

# The encodings a web page may use (the WHATWG Encoding Standard's list, in Python's codec
# names). Anything else (utf-7, rot13, base64, ...) is ignored as a declaration: some are
# not text encodings at all, and utf-7 is a known script-injection vector.
_WEB_ENCODINGS = frozenset(
    {
        "utf-8",
        "utf-16",
        "utf-16-le",
        "utf-16-be",
        "cp866",
        "cp874",
        "cp932",
        "cp949",
        "cp1250",
        "cp1251",
        "cp1252",
        "cp1253",
        "cp1254",
        "cp1255",
        "cp1256",
        "cp1257",
        "cp1258",
        "iso8859-2",
        "iso8859-3",
        "iso8859-4",
        "iso8859-5",
        "iso8859-6",
        "iso8859-7",
        "iso8859-8",
        "iso8859-10",
        "iso8859-13",
        "iso8859-14",
        "iso8859-15",
        "iso8859-16",
        "koi8-r",
        "koi8-u",
        "mac-cyrillic",
        "mac-roman",
        "gb18030",
        "big5hkscs",
        "euc_jp",
        "iso2022_jp",
    }
)

# Labels that browsers read as a superset encoding: a page declaring latin-1 is decoded as
# windows-1252, a page declaring gb2312 as gb18030, and so on.
_SUPERSETS = {
    "ascii": "cp1252",
    "iso8859-1": "cp1252",
    "latin-1": "cp1252",
    "iso8859-9": "cp1254",
    "iso8859-11": "cp874",
    "tis-620": "cp874",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "euc_kr": "cp949",
    "shift_jis": "cp932",
    "big5": "big5hkscs",
}

_MULTI_BYTE = frozenset(
    {
        "utf-8",
        "utf-16",
        "utf-16-le",
        "utf-16-be",
        "gb18030",
        "big5hkscs",
        "cp932",
        "cp949",
        "euc_jp",
        "iso2022_jp",
    }
)

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# Where a document may declare its charset: <meta charset=...>, <meta http-equiv content=
# "...; charset=..."> and an XML declaration. Only the first bytes are scanned.
_PRESCAN_BYTES = 2048
_META_CHARSET = re.compile(
    rb"""<meta[^>]*?charset\s*=\s*["']?\s*([a-z0-9_.:\-]{1,40})""", re.IGNORECASE
)
_XML_ENCODING = re.compile(
    rb"""^\s*<\?xml[^>]*?encoding\s*=\s*["']([a-z0-9_.:\-]{1,40})""", re.IGNORECASE
)

# charset_normalizer reads this much of a body at most; the choice it makes is then applied
# to the whole body.
_DETECT_BYTES = 64 * 1024
# How much more "chaos" (charset_normalizer's measure of implausible text) windows-1252 may
# show than the best single-byte guess and still be preferred to it.
_WESTERN_MARGIN = 0.1


class CharsetSource(enum.StrEnum):
    """Where the encoding used to decode a body came from."""

    BOM = "bom"
    HEADER = "header"
    META = "meta"
    UTF8 = "utf-8"
    DETECTED = "detected"
    REPLACED = "replaced"


@dataclass(frozen=True, slots=True)
class DecodedText:
    """A decoded body: its text, the Python codec used, and why that codec was chosen."""

    text: str
    encoding: str
    source: CharsetSource


@functools.lru_cache(maxsize=512)
def normalize_charset(label: str | None) -> str | None:
    """The Python codec for a charset label as a page may declare it, or ``None`` if unusable.

    Labels are resolved the way browsers resolve them (``latin1`` -> ``cp1252``, ``gb2312``
    -> ``gb18030``); labels that are not web encodings (``utf-7``, ``base64``) give ``None``.
    """
    if not label:
        return None
    label = label.strip().strip("\"'").strip()
    if not label or len(label) > 40 or not label.isascii():
        return None
    try:
        name = codecs.lookup(label).name
    except (LookupError, ValueError):  # ValueError: a NUL in the label
        return None
    name = _SUPERSETS.get(name, name)
    return name if name in _WEB_ENCODINGS else None


def decode_body(body: bytes, *, declared: str | None = None) -> DecodedText:
    """Decode an HTML (or other text) body, trusting declarations only as far as they check out.

    Order: a byte-order mark wins; then the charset ``declared`` in the Content-Type header,
    then one declared in the document's first 2 KB (``<meta charset>``, ``http-equiv``, XML
    declaration). A declaration is used only if the body decodes strictly with it, and a
    single-byte declaration (latin-1, windows-1252, ...) is overruled when the body is valid
    multi-byte UTF-8. Otherwise UTF-8 is tried, then charset_normalizer's guess; as a last
    resort the body is decoded as UTF-8 with replacement characters.

    Args:
        body: the raw (already decompressed) bytes.
        declared: the charset parameter of the Content-Type header, if any.
    """
    for bom, bom_codec in _BOMS:
        if body.startswith(bom):
            text = body[len(bom) :].decode(bom_codec, errors="replace")
            return DecodedText(text, bom_codec, CharsetSource.BOM)

    header = normalize_charset(declared)
    tried: set[str] = set()
    if header == "utf-8":
        # The common case, settled in one pass over the bytes.
        try:
            return DecodedText(body.decode("utf-8"), "utf-8", CharsetSource.HEADER)
        except UnicodeDecodeError:
            tried.add("utf-8")
    elif body.isascii():
        # Every web encoding agrees with ASCII except UTF-16, whose NUL-padded ASCII text is
        # ASCII bytes too.
        if header is not None and header.startswith("utf-16") and b"\x00" in body:
            decoded = _decode_declared(body, header, CharsetSource.HEADER)
            if decoded is not None:
                return decoded
        if header is None or header.startswith("utf-16"):
            return DecodedText(body.decode("ascii"), "utf-8", CharsetSource.UTF8)
        return DecodedText(body.decode("ascii"), header, CharsetSource.HEADER)

    for label, source in ((declared, CharsetSource.HEADER), (_prescan(body), CharsetSource.META)):
        codec = normalize_charset(label)
        if codec is not None and source is CharsetSource.META and codec.startswith("utf-16"):
            # A <meta> readable as ASCII cannot be in UTF-16; browsers take it as UTF-8.
            codec = "utf-8"
        if codec is None or codec in tried:
            continue
        tried.add(codec)
        decoded = _decode_declared(body, codec, source)
        if decoded is not None:
            return decoded

    if "utf-8" not in tried:
        try:
            return DecodedText(body.decode("utf-8"), "utf-8", CharsetSource.UTF8)
        except UnicodeDecodeError:
            pass
    return _detect(body)


def _decode_declared(body: bytes, codec: str, source: CharsetSource) -> DecodedText | None:
    """Decode with a declared codec, or ``None`` if the declaration does not hold up."""
    try:
        text = body.decode(codec)
    except UnicodeDecodeError:
        return None
    if codec not in _MULTI_BYTE and not body.isascii():
        # Bytes that also form valid multi-byte UTF-8 are UTF-8 mislabelled as a single-byte
        # charset (a classic server default); real latin-1 text almost never parses as UTF-8.
        try:
            return DecodedText(body.decode("utf-8"), "utf-8", CharsetSource.UTF8)
        except UnicodeDecodeError:
            pass
    return DecodedText(text, codec, source)


def _prescan(body: bytes) -> str | None:
    head = body[:_PRESCAN_BYTES]
    match = _XML_ENCODING.match(head) or _META_CHARSET.search(head)
    return match.group(1).decode("ascii") if match else None


def _detect(body: bytes) -> DecodedText:
    matches = charset_normalizer.from_bytes(body[:_DETECT_BYTES])
    best = matches.best()
    if best is None:
        return _replace(body)
    # charset_normalizer may name a codec that is not a web encoding (cp437, say); it is
    # still a text codec, so it is used rather than lose the text.
    codec = normalize_charset(best.encoding) or _known_codec(best.encoding)
    if codec is None:
        return _replace(body)
    candidates = [codec]
    if codec not in _MULTI_BYTE and _western_ties(matches, best.chaos) and codec != "cp1252":
        candidates.insert(0, "cp1252")
    for candidate in candidates:
        try:
            return DecodedText(body.decode(candidate), candidate, CharsetSource.DETECTED)
        except UnicodeDecodeError:
            continue
    # The sample fitted but a later part of the body does not: keep the guess.
    return DecodedText(body.decode(codec, errors="replace"), codec, CharsetSource.REPLACED)


def _western_ties(matches: charset_normalizer.CharsetMatches, best_chaos: float) -> bool:
    """Whether windows-1252 reads the sample about as cleanly as the best single-byte guess.

    On short texts several single-byte codecs tie, and charset_normalizer may rank, say,
    Baltic cp1257 over cp1252 for French; browsers settle such ties on windows-1252 too.
    """
    return any(
        match.chaos <= best_chaos + _WESTERN_MARGIN
        and ("cp1252" in match.could_be_from_charset or "latin_1" in match.could_be_from_charset)
        for match in matches
    )


def _known_codec(name: str) -> str | None:
    try:
        codec = codecs.lookup(name).name
    except (LookupError, ValueError):
        return None
    return None if codec == "utf-7" else codec


def _replace(body: bytes) -> DecodedText:
    return DecodedText(body.decode("utf-8", errors="replace"), "utf-8", CharsetSource.REPLACED)
