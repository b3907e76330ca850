"""A page's entities and relations in one call: recognise, link, relate.

:class:`EntityAnalyzer` is what the parse workers run on every page (next to the strategy's
term counts): it pickles as the knowledge base and its settings only, and builds its
automaton, jieba tagger and link indexes in the worker on first use.
"""

from __future__ import annotations

import threading
from typing import Any

from topicrawl.core.models import PageEntities
from topicrawl.kg.link import Linker, LinkWeights
from topicrawl.kg.model import KnowledgeBase
from topicrawl.kg.recognise import NAME_SHAPE, PERSON_MARGIN, Recogniser, has_cjk
from topicrawl.kg.relations import extract_relations

__all__ = ["EMPTY", "EntityAnalyzer", "page_body"]

EMPTY = PageEntities((), ())
_MAX_CHARS = 200_000  # characters of a page analysed at most (hostile pages can be huge)


def page_body(title: str, text: str, main: tuple[int, int] | None = None) -> str:
    """The text mentions index into: the page's title, a newline, its text. With ``main``
    (where the page's main content is in ``text``), the text before and after it is blanked
    (spaces, its newlines kept at the edges), so offsets stay those of the whole text."""
    if main is not None:
        start, end = main
        if 0 < start <= end <= len(text) and text[start - 1] == "\n":
            text = " " * (start - 1) + "\n" + text[start:end] + _blank_tail(text, end)
        elif start == 0 and end <= len(text):
            text = text[:end] + _blank_tail(text, end)
    return f"{title}\n{text}" if title else text


def _blank_tail(text: str, end: int) -> str:
    return "\n" + " " * (len(text) - end - 1) if end < len(text) else ""


class EntityAnalyzer:
    """Finds a page's entities and relations (``(title, text) -> PageEntities``).

    Args:
        kb: the knowledge base to link to.
        weights: the linker's weights and NIL threshold.
        max_mentions: mentions kept per page at most (the first ones).
        chinese, english: which recognisers run besides the KB's gazetteer.
        name_shape: the least name shape of a Chinese name from jieba's tags
            (:class:`~topicrawl.kg.recognise.Recogniser`).
        person_margin: the least part-of-speech margin of a Chinese person's name from
            jieba's tags (:func:`~topicrawl.kg.recognise.person_margin`; None: not checked).
    """

    def __init__(
        self,
        kb: KnowledgeBase,
        *,
        weights: LinkWeights | None = None,
        max_mentions: int = 300,
        chinese: bool = True,
        english: bool = True,
        name_shape: float = NAME_SHAPE,
        person_margin: float | None = PERSON_MARGIN,
    ) -> None:
        self.kb = kb
        self._weights = weights or LinkWeights()
        self._max_mentions = max_mentions
        self._chinese = chinese
        self._english = english
        self._name_shape = name_shape
        self._person_margin = person_margin
        self._parts: tuple[Recogniser, Linker] | None = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {
            "kb": self.kb,
            "weights": self._weights,
            "max_mentions": self._max_mentions,
            "chinese": self._chinese,
            "english": self._english,
            "name_shape": self._name_shape,
            "person_margin": self._person_margin,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["kb"],
            weights=state["weights"],
            max_mentions=state["max_mentions"],
            chinese=state["chinese"],
            english=state["english"],
            name_shape=state["name_shape"],
            person_margin=state.get("person_margin", PERSON_MARGIN),
        )

    def _ready(self) -> tuple[Recogniser, Linker]:
        if self._parts is None:
            with self._lock:
                if self._parts is None:
                    self._parts = (
                        Recogniser(
                            self.kb,
                            chinese=self._chinese,
                            english=self._english,
                            name_shape=self._name_shape,
                            person_margin=self._person_margin,
                        ),
                        Linker(self.kb, weights=self._weights),
                    )
        return self._parts

    def __call__(
        self, title: str, text: str, *, main: tuple[int, int] | None = None
    ) -> PageEntities:
        """The page's entities and relations. With ``main`` (where the page's ``<main>``
        element is in ``text``: :attr:`~topicrawl.core.models.ParsedPage.main`), only the
        title and the main content are read: a site's header, menus and footer name the
        same things on every page (on the Java API docs, 13 % of the mentions, most of them
        names of nothing: "Oracle Parkway", "Java SE Documentation")."""
        body = page_body(title, text, main)[:_MAX_CHARS]
        if not body.strip():
            return EMPTY
        recogniser, linker = self._ready()
        cjk = has_cjk(body)  # a scan of the page: once for both
        spans = recogniser.spans(body, cjk=cjk)[: self._max_mentions]
        mentions = linker.link(body, spans, cjk=cjk)
        relations = extract_relations(body, mentions, self.kb)
        return PageEntities(tuple(mentions), tuple(relations))
