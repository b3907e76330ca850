"""Entities found in the parse workers: the same as in-process, and a failure loses only them."""

from __future__ import annotations

import pytest

from tests.unit.engine.analyzers import WordCounts
from tests.unit.engine.responses import html_response
from topicrawl.core.models import PageEntities
from topicrawl.engine.parsing import PageParser, parse_body
from topicrawl.kg.analyse import EntityAnalyzer
from topicrawl.kg.model import KnowledgeBase
from topicrawl.parse import worker

PAGE = """<html><head><title>Films</title></head><body>
<p>Inception was directed by Christopher Nolan. 盗梦空间的导演是诺兰。</p>
<a href="/next">Next</a></body></html>"""


class Failing:
    """An entity analyzer that fails on every page (it pickles: a module-level class)."""

    def __call__(
        self, title: str, text: str, *, main: tuple[int, int] | None = None
    ) -> PageEntities:
        raise ValueError(f"cannot analyse {title!r}")


async def test_workers_find_what_the_analyzer_finds_in_process(kb: KnowledgeBase) -> None:
    analyzer = EntityAnalyzer(kb)
    parser = PageParser(workers=1, analyzer=WordCounts(), entities=analyzer)
    try:
        result = await parser(html_response(PAGE))
    finally:
        await parser.close()
    inline = parse_body(PAGE, "http://demo.test/page", entity_analyzer=analyzer)
    assert result.entities == inline.entities
    assert result.terms is not None  # the text analyzer still ran
    assert result.entities is not None
    assert {m.entity for m in result.entities.mentions} == {"inception", "nolan"}
    assert {(r.subject, r.relation, r.object) for r in result.entities.relations} == {
        ("inception", "directed_by", "nolan")
    }


FRAMED = """<html><head><title>Films</title></head><body>
<header><p>Apple Inc. sponsors this site</p>
<nav><a href="/nolan">Christopher Nolan</a></nav></header>
<main><p>Inception was directed by Christopher Nolan.</p></main>
<footer><p>Copyright Redwood Shores, ArrayList Partners</p></footer></body></html>"""


def test_only_the_title_and_the_main_content_are_read(kb: KnowledgeBase) -> None:
    document = parse_body(FRAMED, "http://demo.test/page", entity_analyzer=EntityAnalyzer(kb))
    assert document.entities is not None
    mentions = document.entities.mentions
    # The header's Apple Inc. and footer's ArrayList, Redwood Shores are not read; the
    # menu's Christopher Nolan is, in the main text only.
    assert {m.surface for m in mentions} == {"Inception", "Christopher Nolan"}
    body = f"{document.page.title}\n{document.page.text}"
    assert [body[m.start : m.end] for m in mentions] == [m.surface for m in mentions]
    assert [m.start for m in mentions] == [body.index("Inception"), body.rindex("Christopher")]
    # Without its main content marked, the analyser reads the whole page.
    whole = EntityAnalyzer(kb)(document.page.title, document.page.text)
    assert {"Apple Inc.", "ArrayList"} <= {m.surface for m in whole.mentions}


async def test_parsing_inline_finds_entities_too(kb: KnowledgeBase) -> None:
    parser = PageParser(workers=0, entities=EntityAnalyzer(kb))
    try:
        result = await parser(html_response(PAGE))
    finally:
        await parser.close()
    assert result.entities is not None
    assert result.entities.relations


async def test_a_failing_entity_analyzer_leaves_out_only_the_entities(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(worker, "_analyzer_failures", {})
    document = parse_body(PAGE, "http://demo.test/1", entity_analyzer=Failing())
    assert document.entities is None
    assert "Inception" in document.page.text
    assert "the entity analyzer failed on http://demo.test/1" in capsys.readouterr().err
    parser = PageParser(workers=1, entities=Failing())
    try:
        result = await parser(html_response(PAGE))
    finally:
        await parser.close()
    assert result.entities is None
    assert "Inception" in result.page.text
