from __future__ import annotations

import asyncio

import pytest

from topicrawl.core.models import Response
from topicrawl.engine.parsing import PageParser, parse_document

PAGE = """<html><head><title>Comets</title></head><body>
<nav><ul><li><a href="/a">Alpha</a></li><li><a href="/b">Beta</a></li></ul></nav>
<p>Comets are icy bodies. See <a href="http://other.test/x">elsewhere</a>.</p></body></html>"""


def _response(html: str, url: str = "http://demo.test/page") -> Response:
    return Response(
        url=url,
        final_url=url,
        status=200,
        headers={},
        body=html.encode(),
        content_type="text/html",
        encoding="utf-8",
        text=html,
        fetched_at=0.0,
        elapsed=0.0,
    )


async def test_worker_parses_like_inline() -> None:
    parser = PageParser(workers=1)
    try:
        result = await parser(_response(PAGE))
    finally:
        await parser.close()
    assert result == parse_document(PAGE, "http://demo.test/page")
    assert [link.url for link in result[0].links] == [
        "http://demo.test/a",
        "http://demo.test/b",
        "http://other.test/x",
    ]


async def test_pages_of_a_killed_worker_are_parsed_by_a_new_one() -> None:
    parser = PageParser(workers=1)
    try:
        await parser(_response(PAGE))  # starts the worker
        tasks = [
            asyncio.create_task(parser(_response(PAGE * 50, f"http://demo.test/{i}")))
            for i in range(20)
        ]
        await asyncio.sleep(0)
        parser._workers[0].process.kill()
        results = await asyncio.gather(*tasks)
    finally:
        await parser.close()
    assert [r[0].title for r in results] == ["Comets"] * 20


async def test_a_page_over_the_time_limit_fails_alone() -> None:
    # Thousands of distinct unclosed inline elements make the HTML parser quadratic.
    hostile = "<html><body>" + "".join(f'<b id="n{i}">x' for i in range(40_000))
    parser = PageParser(workers=1, timeout=3.0)
    try:
        with pytest.raises(ValueError, match="longer than"):
            await parser(_response(hostile))
        result = await parser(_response(PAGE))
    finally:
        await parser.close()
    assert result[0].title == "Comets"
