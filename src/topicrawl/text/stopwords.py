"""Stopword lists for English and Chinese, shipped as package data and loaded once."""

from __future__ import annotations

import functools
from importlib import resources

from topicrawl.core.errors import ConfigError

__all__ = ["LANGUAGES", "all_stopwords", "stopwords"]

LANGUAGES: tuple[str, ...] = ("en", "zh")


@functools.cache
def stopwords(lang: str) -> frozenset[str]:
    """Return the stopword list for ``lang`` ("en" or "zh").

    Raises:
        ConfigError: no list is shipped for ``lang``.
    """
    if lang not in LANGUAGES:
        raise ConfigError(f"no stopword list for language {lang!r}; known: {', '.join(LANGUAGES)}")
    text = resources.files("topicrawl.text").joinpath(f"stopwords_{lang}.txt").read_text("utf-8")
    return frozenset(
        word
        for line in text.splitlines()
        if (word := line.strip().lower()) and not word.startswith("#")
    )


@functools.cache
def all_stopwords() -> frozenset[str]:
    """Return the union of every shipped list (text mixes languages, so both apply)."""
    return frozenset().union(*(stopwords(lang) for lang in LANGUAGES))
