"""Text normalisation and content hashes for duplicate-page detection."""

from __future__ import annotations

import unicodedata

import xxhash

__all__ = ["content_hash", "normalise_text"]


def normalise_text(text: str) -> str:
    """The form of a page's text that duplicate detection compares.

    NFKC-normalised (so ligatures, full-width forms and composed/decomposed accents agree),
    case-folded (a stronger lower-casing: "STRASSE" and "straße" agree), and with every run
    of whitespace, line breaks included, collapsed to one space and the ends stripped.
    """
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def content_hash(text: str) -> str:
    """The 128-bit xxh3 hash (32 hex digits) of :func:`normalise_text` of ``text``.

    Pages whose text differs only in whitespace, case or Unicode normal form hash equal.
    """
    data = normalise_text(text).encode("utf-8", "surrogatepass")
    return str(xxhash.xxh3_128_hexdigest(data))
