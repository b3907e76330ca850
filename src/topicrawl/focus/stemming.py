"""A tokenizer that reduces English words to their Snowball (Porter 2) stems, so that
"concurrency" and "concurrent", "compression" and "compress" meet on one term."""

from __future__ import annotations

import re
from collections.abc import Iterable

from topicrawl.core.errors import ConfigError
from topicrawl.text.tokenize import Tokenizer

__all__ = ["STEMMERS", "SnowballTokenizer", "make_tokenizer"]

STEMMERS: tuple[str, ...] = ("light", "snowball")
"""``light``: plurals folded (the text layer's S-stemmer); ``snowball``: Porter 2 stems."""

_ASCII_WORD = re.compile(r"[a-z]+")


class SnowballTokenizer(Tokenizer):
    """:class:`~topicrawl.text.tokenize.Tokenizer` whose lowercase ASCII words become Snowball
    English stems; user words, other scripts and words with digits are left as they are."""

    def __init__(self, **options: object) -> None:
        import snowballstemmer  # noqa: PLC0415 - loaded by the crawls that stem

        super().__init__(**options)  # type: ignore[arg-type]
        self._stemmer = snowballstemmer.stemmer("english")

    def _word_token(self, word: str) -> str:
        # The base class memoises what each word becomes, stem included.
        token = super()._word_token(word)
        if token and _ASCII_WORD.fullmatch(token) and token not in self.user_words:
            return str(self._stemmer.stemWord(token))
        return token


def make_tokenizer(stemmer: str, *, user_words: Iterable[str], stem: bool) -> Tokenizer:
    """The tokenizer for a stemmer name (see :data:`STEMMERS`).

    Raises:
        ConfigError: the stemmer is unknown.
    """
    if stemmer == "snowball":
        return SnowballTokenizer(user_words=user_words, stem=stem)
    if stemmer == "light":
        return Tokenizer(user_words=user_words, stem=stem)
    raise ConfigError(f"unknown stemmer {stemmer!r}; choose one of: {', '.join(STEMMERS)}")
