"""Counting a page's terms in the parse workers with the strategy's text analyzer."""

from __future__ import annotations

import asyncio
import pickle
from collections import Counter

import pytest

from tests.unit.engine.analyzers import Unloadable, WordCounts
from tests.unit.engine.responses import html_response
from topicrawl.engine.parsing import PageParser, parse_body
from topicrawl.focus.stemming import PageTerms
from topicrawl.parse import worker

PAGE = """<html><head><title>Machine learning crawlers</title></head><body>
<p>Crawlers fetching pages: 机器学习让爬虫更聪明。 Crawling and crawled pages.</p>
<a href="/next">Next crawler</a></body></html>"""


def _analyzer() -> PageTerms:
    return PageTerms(stemmer="snowball", user_words=["机器学习"], stem=True)


async def test_workers_count_the_terms_as_the_analyzer_does_in_process() -> None:
    analyzer = _analyzer()
    parser = PageParser(workers=1, analyzer=analyzer)
    try:
        result = await parser(html_response(PAGE))
    finally:
        await parser.close()
    inline = parse_body(PAGE, "http://demo.test/page")
    assert result.page == inline.page
    assert inline.terms is None
    expected = analyzer(inline.page.title, inline.page.text)
    assert result.terms == expected
    assert list(result.terms) == list(expected)  # first occurrence order, title first
    # Snowball stems (crawlers, Crawlers, crawler; crawling, crawled), the user word whole.
    assert expected["crawler"] == 3
    assert expected["crawl"] == 2
    assert expected["机器学习"] == 1


async def test_a_worker_started_after_one_was_killed_gets_the_analyzer_too() -> None:
    parser = PageParser(workers=1, analyzer=WordCounts())
    try:
        first = await parser(html_response(PAGE))
        parser._workers[0].process.kill()
        await parser._workers[0].process.wait()
        again = await parser(html_response(PAGE))
    finally:
        await parser.close()
    assert first.terms is not None
    assert again.terms == first.terms


async def test_an_analyzer_failing_on_a_page_leaves_out_only_that_pages_terms() -> None:
    parser = PageParser(workers=1, analyzer=WordCounts())
    try:
        results = await asyncio.gather(
            parser(html_response("<title>a</title><p>calm words</p>", "http://demo.test/1")),
            parser(html_response("<title>b</title><p>boom</p>", "http://demo.test/2")),
            parser(html_response("<title>c</title><p>calm again</p>", "http://demo.test/3")),
        )
    finally:
        await parser.close()
    assert [r.page.text for r in results] == ["calm words", "boom", "calm again"]
    assert [r.terms for r in results] == [
        Counter({"a": 1, "calm": 1, "words": 1}),
        None,
        Counter({"c": 1, "calm": 1, "again": 1}),
    ]


async def test_an_analyzer_the_worker_cannot_load_leaves_the_terms_out() -> None:
    parser = PageParser(workers=1, analyzer=Unloadable())
    try:
        result = await parser(html_response(PAGE))
    finally:
        await parser.close()
    assert result.page == parse_body(PAGE, "http://demo.test/page").page
    assert result.terms is None


async def test_pages_parsed_on_the_event_loop_come_without_terms() -> None:
    parser = PageParser(workers=0, analyzer=WordCounts())
    try:
        result = await parser(html_response(PAGE))
    finally:
        await parser.close()
    assert result == parse_body(PAGE, "http://demo.test/page")
    assert result.terms is None


def test_an_analyzer_that_cannot_be_pickled_fails_at_set_up() -> None:
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        PageParser(workers=1, analyzer=lambda title, text: Counter(text.split()))


def test_a_failing_analyzer_reports_its_first_failure_and_then_only_counts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(worker, "_analyzer_failures", {})
    for i in range(120):
        url = f"http://demo.test/{i}"
        document = parse_body("<p>boom</p>", url, analyzer=WordCounts())
        assert document.page.text == "boom"
        assert document.terms is None
    err = capsys.readouterr().err
    assert err.count("Traceback") == 1
    assert "the text analyzer failed on http://demo.test/0:" in err
    assert "ValueError: this analyzer fails on 'boom'" in err
    assert "has failed on 10 pages (latest http://demo.test/9)" in err
    assert "has failed on 100 pages (latest http://demo.test/99)" in err
    assert len(err.splitlines()) < 20
