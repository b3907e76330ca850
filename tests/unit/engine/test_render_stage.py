"""The crawl's render stage with a stand-in browser pool: which responses go to the browser
and what comes back to be parsed."""

from __future__ import annotations

import pytest

from topicrawl.core.errors import RenderFailed
from topicrawl.core.models import ErrorKind, Response
from topicrawl.engine.render import RenderStage
from topicrawl.render import Rendered, RenderMode, RenderPolicy

SHELL = b"<html><head><script src=/app.js></script></head><body><div id=app></div></body></html>"


class FakePool:
    def __init__(self, dom: str) -> None:
        self.dom = dom
        self.calls: list[tuple[str, bytes, str]] = []
        self.counts: dict[str, int] = {"requests/fetched": 2}

    async def render(self, url: str, html: bytes, *, content_type: str) -> Rendered:
        self.calls.append((url, html, content_type))
        return Rendered(url, self.dom, 0.1, 2, 0, 100)


def _response(body: bytes, content_type: str = "text/html") -> Response:
    return Response(
        url="http://a.example/",
        final_url="http://a.example/home",
        status=200,
        headers={},
        body=body,
        content_type=content_type,
        encoding=None,
        text=None,
        fetched_at=0.0,
        elapsed=0.01,
        charset="iso-8859-1",
    )


def _stage(pool: FakePool, mode: RenderMode = RenderMode.AUTO, cap: int = 10_000) -> RenderStage:
    return RenderStage(policy=RenderPolicy(mode=mode), pool=pool, max_bytes=cap)  # type: ignore[arg-type]


async def test_a_shell_is_rendered_and_its_dom_parsed_as_utf8() -> None:
    pool = FakePool("<html><body><a href='/x'>é</a></body></html>")
    stage = _stage(pool)
    out = await stage.apply(_response(SHELL))
    assert pool.calls == [("http://a.example/home", SHELL, "text/html; charset=iso-8859-1")]
    assert out.text == pool.dom
    assert out.body == pool.dom.encode()
    assert (out.charset, out.encoding) == ("utf-8", "utf-8")
    assert stage.counts["pages/rendered"] == 1
    assert stage.counts["signals/empty_root"] == 1
    assert stage.counts["requests/fetched"] == 2  # the pool's counts come along


async def test_a_complete_page_or_a_non_html_one_goes_as_it_came() -> None:
    pool = FakePool("unused")
    stage = _stage(pool)
    page = _response(b"<html><body><p>" + b"words " * 100 + b"</p><script></script></body></html>")
    assert await stage.apply(page) is page
    json_response = _response(b"{}", "application/json")
    assert await _stage(pool, RenderMode.ALWAYS).apply(json_response) is json_response
    assert pool.calls == []
    assert stage.counts["pages/not_rendered"] == 1


async def test_a_dom_over_the_cap_fails_the_page() -> None:
    stage = _stage(FakePool("<p>" + "x" * 500 + "</p>"), cap=100)
    with pytest.raises(RenderFailed) as failed:
        await stage.apply(_response(SHELL))
    assert failed.value.kind is ErrorKind.TOO_LARGE
    assert stage.counts["pages/render_failed"] == 1
