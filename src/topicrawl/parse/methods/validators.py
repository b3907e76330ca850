"""Validators of extracted field values: each turns a raw string (or list) into a clean value or
says why it cannot.

A validator is strict on purpose: the parser library decides that a method still works by
whether its output validates, so a validator that accepts anything hides a broken method.
Counts accept the written forms video and social sites use ("1.2万", "3.4K", "1,234",
"12.5 million", "1.2亿", with a label or unit word around them) and nothing else: a date, a
time, a version number or a sentence is not a count.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from urllib.parse import urlsplit

__all__ = [
    "VALIDATORS",
    "Invalid",
    "RawValue",
    "Value",
    "parse_count",
    "validate",
]

RawValue = str | list[str]
"""What a method extracts for a field: its text, or a list of texts (names)."""
Value = str | int | float | list[str]
"""A validated field value, as stored in a record (JSON-friendly)."""

MAX_TEXT = 10_000
"""Longest text kept for a field (longer is cut, not rejected)."""


class Invalid(ValueError):
    """A raw value the field's validator rejects (the message says why)."""


_MULTIPLIERS: dict[str, float] = {
    "": 1,
    "k": 1e3,
    "thousand": 1e3,
    "m": 1e6,
    "mn": 1e6,
    "million": 1e6,
    "millions": 1e6,
    "b": 1e9,
    "bn": 1e9,
    "billion": 1e9,
    "万": 1e4,
    "萬": 1e4,
    "亿": 1e8,
    "億": 1e8,
    "千": 1e3,
}
# A number with optional thousands separators (1,234 or 1 234) or decimals, then a multiplier.
_COUNT = re.compile(
    r"^(?P<num>\d{1,3}(?:[,\u00a0 ]\d{3})+|\d+)(?:\.(?P<frac>\d+))?\s*"
    r"(?P<mult>k|thousand|m|mn|millions?|b|bn|billion|万|萬|亿|億|千)?\+?$",
    re.IGNORECASE,
)
# Words a count may come with on a page ("Plays: 1.2K", "1.2万次播放", "3,400 views").
_LABEL = re.compile(
    r"^(?:[A-Za-z\u4e00-\u9fff ]{1,20}[:：]\s*)?(?P<body>.+?)\s*"
    r"(?:(?:plays?|views?|comments?|favou?rites?|likes?|followers?|次播放|播放量?|次观看|"
    r"观看|条评论|评论|人收藏|收藏|次|人|条))?$",
    re.IGNORECASE,
)


def parse_count(raw: str) -> int:
    """A written count as an integer: "1.2万" -> 12000, "3.4K" -> 3400, "1,234" -> 1234.

    Raises:
        Invalid: ``raw`` is not a count (a date, a time, several numbers, words).
    """
    text = " ".join(raw.split())
    label = _LABEL.match(text)
    body = label.group("body") if label else text
    match = _COUNT.match(body)
    if match is None:
        raise Invalid(f"not a count: {raw[:60]!r}")
    digits = re.sub(r"[,\u00a0 ]", "", match.group("num"))
    frac = match.group("frac")
    mult = (match.group("mult") or "").lower()
    if frac is not None and mult == "":
        raise Invalid(f"a count has no decimals without a multiplier: {raw[:60]!r}")
    number = float(f"{digits}.{frac}" if frac else digits)
    return round(number * _MULTIPLIERS[mult])


def _text(raw: RawValue) -> str:
    if isinstance(raw, list):
        raw = " ".join(raw)
    text = " ".join(raw.split())
    if not text:
        raise Invalid("empty text")
    return text[:MAX_TEXT]


def _number(raw: RawValue) -> float:
    text = _text(raw).replace(",", "")
    try:
        return float(text)
    except ValueError:
        raise Invalid(f"not a number: {text[:60]!r}") from None


def _count(raw: RawValue) -> int:
    return parse_count(_text(raw))


_DATE_FORMATS = ("%Y-%m-%d", "%Y/%m/%d", "%Y.%m.%d", "%d %B %Y", "%B %d, %Y", "%Y年%m月%d日")


def _date(raw: RawValue) -> str:
    text = _text(raw)
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).date().isoformat()
    except ValueError:
        pass
    for form in _DATE_FORMATS:
        try:
            return datetime.strptime(text, form).date().isoformat()
        except ValueError:
            continue
    if re.fullmatch(r"1[89]\d\d|2\d\d\d", text):
        return text  # a year alone
    raise Invalid(f"not a date: {text[:60]!r}")


def _url(raw: RawValue) -> str:
    text = _text(raw)
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc or " " in text:
        raise Invalid(f"not an absolute http(s) URL: {text[:60]!r}")
    return text


_NAME_SPLIT = re.compile(r"\s*(?:[,;/、，；|]|\band\b|\s{2,})\s*")


def _names(raw: RawValue) -> list[str]:
    if isinstance(raw, list) and len(raw) == 1:
        raw = raw[0]  # one element holding every name
    items = raw if isinstance(raw, list) else _NAME_SPLIT.split(raw)
    names: list[str] = []
    for item in items:
        name = " ".join(item.split()).strip(" ,;")
        if name and name not in names:
            names.append(name[:200])
    if not names:
        raise Invalid("no names")
    if any(re.fullmatch(r"[\d.,:/ -]+", name) for name in names):
        raise Invalid(f"a name that is only digits: {names[:3]!r}")
    return names[:200]


VALIDATORS: dict[str, Callable[[RawValue], Value]] = {
    "text": _text,
    "number": _number,
    "count": _count,
    "date": _date,
    "url": _url,
    "names": _names,
}
"""Each validator by the name a schema gives it."""


def validate(kind: str, raw: RawValue) -> Value:
    """``raw`` checked and cleaned by the validator named ``kind``.

    Raises:
        Invalid: the value does not pass.
        KeyError: no validator has that name.
    """
    return VALIDATORS[kind](raw)
