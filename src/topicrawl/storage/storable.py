"""Make strings storable as UTF-8 text in SQLite and PostgreSQL alike.

NUL characters (which PostgreSQL ``TEXT`` cannot hold) become U+FFFD, as HTML parsers do, and
lone surrogates (which neither database can encode as UTF-8) become ``?``.
"""

from __future__ import annotations

__all__ = ["clean", "clean_opt"]


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


def clean_opt(value: str | None) -> str | None:
    """:func:`clean` for an optional string."""
    return None if value is None else clean(value)
