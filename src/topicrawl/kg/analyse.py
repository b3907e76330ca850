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
from topicrawl.kg.recognise import NAME_SHAPE, Recogniser, has_cjk
from topicrawl.kg.relations import extract_relations

__all__ = ["EMPTY", "EntityAnalyzer", "page_body"]

EMPTY = PageEntities((), ())
_MAX_CHARS = 200_000  # characters of a page analysed at most (hostile pages can be huge)


def page_body(title: str, text: str) -> str:
    """The text mentions index into: the page's title, a newline, its text."""
    return f"{title}\n{text}" if title else text


class EntityAnalyzer:
    """Finds a page's entities and relations (``(title, text) -> PageEntities``).

    Args:
        kb: the knowledge base to link to.
        weights: the linker's weights and NIL threshold.
        max_mentions: mentions kept per page at most (the first ones).
        chinese, english: which recognisers run besides the KB's gazetteer.
        name_shape: the least name shape of a Chinese name from jieba's tags
            (:class:`~topicrawl.kg.recognise.Recogniser`).
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
    ) -> None:
        self.kb = kb
        self._weights = weights or LinkWeights()
        self._max_mentions = max_mentions
        self._chinese = chinese
        self._english = english
        self._name_shape = name_shape
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
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["kb"],
            weights=state["weights"],
            max_mentions=state["max_mentions"],
            chinese=state["chinese"],
            english=state["english"],
            name_shape=state["name_shape"],
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
                        ),
                        Linker(self.kb, weights=self._weights),
                    )
        return self._parts

    def __call__(self, title: str, text: str) -> PageEntities:
        body = page_body(title, text)[:_MAX_CHARS]
        if not body.strip():
            return EMPTY
        recogniser, linker = self._ready()
        cjk = has_cjk(body)  # a scan of the page: once for both
        spans = recogniser.spans(body, cjk=cjk)[: self._max_mentions]
        mentions = linker.link(body, spans, cjk=cjk)
        relations = extract_relations(body, mentions, self.kb)
        return PageEntities(tuple(mentions), tuple(relations))
