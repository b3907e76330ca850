"""Text normalisation and content hashes for duplicate-page detection."""

from __future__ import annotations

import unicodedata

import xxhash

__all__ = ["content_hash", "content_hash_of_lines", "normalise_text"]

_ASCII = bytes(range(128))
# Lower-cases ASCII letters and turns line breaks into spaces; other bytes stay.
_FOLD_LINES = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ\n", b"abcdefghijklmnopqrstuvwxyz ")


def normalise_text(text: str) -> str:
    """The form of a page's text that duplicate detection compares.

    NFKC-normalised (so ligatures, full-width forms and composed/decomposed accents agree),
    case-folded (a stronger lower-casing: "STRASSE" and "straße" agree), and with every run
    of whitespace, line breaks included, collapsed to one space and the ends stripped.
    """
    if text.isascii():  # NFKC leaves ASCII as it is, and casefold() of ASCII is lower()
        return " ".join(text.lower().split())
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def content_hash(text: str) -> str:
    """The 128-bit xxh3 hash (32 hex digits) of :func:`normalise_text` of ``text``.

    Pages whose text differs only in whitespace, case or Unicode normal form hash equal.
    """
    data = normalise_text(text).encode("utf-8", "surrogatepass")
    return str(xxhash.xxh3_128_hexdigest(data))


def content_hash_of_lines(text: str) -> str:
    """:func:`content_hash` of text already in lines, as ``parse_html`` makes it, only quicker.

    ``text`` must be non-empty lines joined by "\\n", each line equal to
    ``" ".join(line.split())``, so that its only whitespace is single spaces and line breaks.
    Neither NFKC nor casefold turns a character into nothing or into whitespace other than a
    space (true of every code point in Python 3.11's Unicode data), so unless NFKC adds a
    space the normalised text is the folded text with its line breaks made spaces, and the
    text need not be split into words.
    """
    if not text.isascii():
        if not unicodedata.is_normalized("NFKC", text):  # rare: "…", "™", "²" and the like
            # A line break ends every normalisation segment, so the lines can be normalised
            # one by one: most of them need not be, and NFKC of a whole page is slow.
            normal = "\n".join(map(_nfkc, text.split("\n")))
            if normal.count(" ") != text.count(" "):  # NFKC made a space: "´" is " \u0301"
                return content_hash(text)
            text = normal
        data = text.encode("utf-8", "surrogatepass")
        # casefold maps each character on its own (unlike lower(), which has a rule for a
        # final sigma) and never to nothing, so if it leaves the non-ASCII characters as they
        # are together, it leaves each of them as it is, and folding is ASCII lower-casing.
        others = data.translate(None, _ASCII).decode("utf-8", "surrogatepass")
        if others.casefold() != others:
            data = text.casefold().encode("utf-8", "surrogatepass")
    else:
        data = text.encode("ascii")
    return str(xxhash.xxh3_128_hexdigest(data.translate(_FOLD_LINES)))


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)
