"""A tokenizer that reduces English words to their Snowball (Porter 2) stems, so that
"concurrency" and "concurrent", "compression" and "compress" meet on one term."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from topicrawl.core.errors import ConfigError
from topicrawl.text.tokenize import Tokenizer

__all__ = ["STEMMERS", "PageTerms", "SnowballTokenizer", "make_tokenizer"]

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


class PageTerms:
    """Counts a page's terms (its title and text) with a crawl's tokenizer: the strategy's
    :class:`~topicrawl.core.protocols.TextAnalyzer`.

    It pickles as its settings and builds its tokenizer again where it is unpickled, so the
    engine's parse workers count the same terms as the strategy would (same stemmer, user
    words and stopwords; jieba's dictionary is the same in every process).

    Raises:
        ConfigError: the stemmer is unknown.
    """

    def __init__(self, *, stemmer: str, user_words: Iterable[str], stem: bool) -> None:
        self._settings = (stemmer, tuple(user_words), stem)
        self.tokenizer = make_tokenizer(stemmer, user_words=self._settings[1], stem=stem)

    def __reduce__(self) -> tuple[object, ...]:
        return (_page_terms, self._settings)

    def __call__(self, title: str, text: str) -> Counter[str]:
        """Term -> count, in the order the terms first occur (title first)."""
        return Counter(self.tokenizer.tokens(f"{title}\n{text}"))


def _page_terms(stemmer: str, user_words: tuple[str, ...], stem: bool) -> PageTerms:
    return PageTerms(stemmer=stemmer, user_words=user_words, stem=stem)
