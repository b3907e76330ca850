from __future__ import annotations

import asyncio
import dataclasses
import io
import sys
from pathlib import Path

import pytest

from tests.unit.engine.responses import html_response
from topicrawl.core.models import Response
from topicrawl.engine import parsing
from topicrawl.engine.parsing import PageParser, parse_body
from topicrawl.parse.worker import CPU_LIMITED, read_frame, request_frame

PAGE = """<html><head><title>Comets</title></head><body>
<nav><ul><li><a href="/a">Alpha</a></li><li><a href="/b">Beta</a></li></ul></nav>
<p>Comets are icy bodies. See <a href="http://other.test/x">elsewhere</a>.</p></body></html>"""


async def test_worker_parses_like_inline() -> None:
    parser = PageParser(workers=1)
    try:
        result = await parser(html_response(PAGE))
    finally:
        await parser.close()
    assert result == parse_body(PAGE, "http://demo.test/page")
    assert [link.url for link in result.page.links] == [
        "http://demo.test/a",
        "http://demo.test/b",
        "http://other.test/x",
    ]


async def test_pages_of_a_killed_worker_are_parsed_by_a_new_one() -> None:
    parser = PageParser(workers=1)
    try:
        await parser(html_response(PAGE))  # starts the worker
        tasks = [
            asyncio.create_task(parser(html_response(PAGE * 50, f"http://demo.test/{i}")))
            for i in range(20)
        ]
        await asyncio.sleep(0)
        parser._workers[0].process.kill()
        results = await asyncio.gather(*tasks)
    finally:
        await parser.close()
    assert [r.page.title for r in results] == ["Comets"] * 20


@pytest.mark.skipif(not CPU_LIMITED, reason="workers time their CPU with POSIX timers")
async def test_a_page_over_the_cpu_budget_fails_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    # Thousands of distinct unclosed inline elements make the HTML parser quadratic.
    hostile = "<html><body>" + "".join(f'<b id="n{i}">x' for i in range(40_000))
    monkeypatch.setattr(parsing, "WALL_FACTOR", 1000.0)  # only the worker's CPU timer acts
    parser = PageParser(workers=1, timeout=1.0)
    try:
        await parser(html_response(PAGE))  # starts the worker
        queued = asyncio.create_task(parser(html_response(PAGE, "http://demo.test/behind")))
        with pytest.raises(ValueError, match="longer than 1 s of CPU time"):
            await parser(html_response(hostile))
        behind = await queued
        result = await parser(html_response(PAGE))
    finally:
        await parser.close()
    assert result.page.title == behind.page.title == "Comets"
    assert parser.restarts == 1


async def test_a_slow_page_that_uses_no_cpu_is_waited_for(tmp_path: Path) -> None:
    # A loaded machine: the worker waits 3 s for the CPU on a page that needs milliseconds of
    # it. A wall-clock limit of 0.5 s killed it, and at load 17 restarted workers in a loop.
    parser = PageParser(workers=1, timeout=0.5, command=_misbehaving("slow", tmp_path / "x"))
    try:
        results = await asyncio.gather(
            parser(html_response(PAGE, "http://demo.test/slow")),
            *(parser(html_response(PAGE, f"http://demo.test/{i}")) for i in range(5)),
        )
    finally:
        await parser.close()
    assert [r.page.title for r in results] == ["Comets"] * 6
    assert parser.restarts == 0


def _raw(body: bytes, charset: str | None, url: str = "http://demo.test/raw") -> Response:
    return Response(
        url=url,
        final_url=url,
        status=200,
        headers={},
        body=body,
        content_type="text/html",
        encoding=None,
        text=None,
        fetched_at=0.0,
        elapsed=0.0,
        charset=charset,
    )


async def test_worker_decodes_bytes_and_corrects_a_wrong_declared_charset() -> None:
    # The header says utf-8, the page is GBK (and says so in <meta>): the worker must not
    # trust the header, just as the fetcher's own decoding would not.
    html = (
        '<html><head><meta charset="gbk"><title>彗星</title></head><body>彗星是冰冷的天体。</body>'
    )
    body = html.encode("gbk")
    parser = PageParser(workers=1)
    try:
        result = await parser(_raw(body, "utf-8"))
    finally:
        await parser.close()
    assert result.page.title == "彗星"
    assert result.encoding in {"gbk", "gb18030"}  # the decoder reads GBK as its superset
    assert result == parse_body(body, "http://demo.test/raw", charset="utf-8")


async def test_time_limit_counts_from_when_the_worker_starts_a_page() -> None:
    # Twenty pages of ~0.1-0.2 s each queue for several seconds in one worker; none of them
    # takes 2.5 s by itself, so none may fail, however long it waited in the queue.
    slow = "<html><body>" + "".join(f'<b id="n{i}">x' for i in range(6_000))
    parser = PageParser(workers=1, timeout=2.5)
    try:
        results = await asyncio.gather(
            *(parser(html_response(slow, f"http://demo.test/{i}")) for i in range(20))
        )
    finally:
        await parser.close()
    assert len(results) == 20


async def test_bodies_queued_to_workers_stay_within_the_byte_budget() -> None:
    page = PAGE * 400  # ~80 KB
    size = len(page)
    parser = PageParser(workers=1, max_pending_bytes=3 * size)
    seen: list[int] = []

    async def watch() -> None:
        while True:
            seen.append(parser.pending_bytes)
            await asyncio.sleep(0)

    watcher = asyncio.create_task(watch())
    try:
        results = await asyncio.gather(
            *(parser(html_response(page, f"http://demo.test/{i}")) for i in range(30))
        )
        most = max(seen)
        big = await parser(html_response(PAGE * 2000))  # larger than the budget: parsed alone
    finally:
        watcher.cancel()
        await parser.close()
    assert len(results) == 30
    assert big.page.title == "Comets"
    assert most == 3 * size


def _misbehaving(mode: str, marker: Path) -> list[str]:
    return [sys.executable, "-m", "tests.unit.engine.misbehaving_worker", mode, str(marker)]


async def test_an_unreadable_reply_replaces_the_worker_and_loses_no_page(tmp_path: Path) -> None:
    parser = PageParser(workers=1, command=_misbehaving("garble", tmp_path / "garbled"))
    try:
        results = await asyncio.gather(
            *(parser(html_response(PAGE, f"http://demo.test/{i}")) for i in range(10))
        )
        later = await parser(html_response(PAGE, "http://demo.test/later"))
    finally:
        await parser.close()
    assert (tmp_path / "garbled").exists()
    assert [r.page.title for r in results] == ["Comets"] * 10
    assert later.page.title == "Comets"


async def test_only_the_page_that_kills_workers_fails(tmp_path: Path) -> None:
    # The killer is at the head of each worker it reaches; the pages queued behind it go to a
    # new worker each time, and none of them may fail for the killer's deaths.
    parser = PageParser(workers=1, command=_misbehaving("die", tmp_path / "unused"))
    try:
        killer = asyncio.create_task(parser(html_response(PAGE, "http://demo.test/die")))
        await asyncio.sleep(0)
        others = [
            asyncio.create_task(parser(html_response(PAGE, f"http://demo.test/{i}")))
            for i in range(10)
        ]
        with pytest.raises(ValueError, match="died on this page"):
            await killer
        results = await asyncio.gather(*others)
    finally:
        await parser.close()
    assert [r.page.title for r in results] == ["Comets"] * 10


async def test_small_pages_do_not_wait_behind_a_big_one(tmp_path: Path) -> None:
    big = PAGE * 100  # ~20 KB: "big" for this parser
    parser = PageParser(
        workers=1,
        big_page_bytes=10_000,
        inline_max_bytes=5_000,
        command=_misbehaving("slow", tmp_path / "unused"),
    )
    try:
        await parser(html_response(PAGE))  # starts the worker
        slow = asyncio.create_task(parser(html_response(big, "http://demo.test/slow")))
        await asyncio.sleep(0.2)  # the worker is on the big page now
        small = await asyncio.wait_for(parser(html_response(PAGE, "http://demo.test/small")), 2.0)
        medium = asyncio.create_task(parser(html_response(PAGE * 40, "http://demo.test/medium")))
        await asyncio.sleep(0.2)
        medium_waits = not medium.done()  # over inline_max_bytes: queued behind the big page
        assert (await slow).page.title == "Comets"
        assert (await medium).page.title == "Comets"
    finally:
        await parser.close()
    assert small == parse_body(PAGE, "http://demo.test/small")
    assert medium_waits
    assert parser.parsed_inline == 1


async def test_bytes_and_text_bodies_reach_the_worker_unchanged() -> None:
    # The body travels as raw bytes beside its pickled fields; a decoded body as UTF-8,
    # lone surrogates included (a decoder's leftovers must not break the frame).
    text = PAGE.replace("Comets are", "Kometen \u00fcber \u4e16\u754c \udcff are")
    parser = PageParser(workers=1)
    try:
        raw = text.encode("utf-8", "surrogatepass")
        as_text = await parser(dataclasses.replace(html_response(PAGE), text=text, body=raw))
        as_bytes = await parser(dataclasses.replace(html_response(PAGE), text=None, body=raw))
    finally:
        await parser.close()
    assert as_text == parse_body(text, "http://demo.test/page")
    assert as_bytes == parse_body(raw, "http://demo.test/page")
    assert "Kometen \u00fcber \u4e16\u754c" in as_text.page.text


def test_a_request_frame_cut_short_reads_as_the_end() -> None:
    head, body = request_frame(7, "http://demo.test/p", b"<p>hello</p>", "utf-8")
    assert read_frame(io.BytesIO(head + body)) == (
        7,
        "http://demo.test/p",
        b"<p>hello</p>",
        "utf-8",
        None,
    )
    assert read_frame(io.BytesIO(head + body[:-1])) is None
    assert read_frame(io.BytesIO(head[:5])) is None
    assert read_frame(io.BytesIO(b"")) is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pipe sizes are Linux's")
async def test_the_worker_widens_its_pipes_to_a_mebibyte() -> None:
    # With 64 KiB pipes a page's body waited, copied, in the event loop's write buffer
    # while the worker drained it 64 KiB at a time (Java docs crawl: ~1,190 pages/s
    # against ~1,450 with 1 MiB pipes, same machine, same minutes).
    import fcntl  # noqa: PLC0415 - Linux only

    parser = PageParser(workers=1)
    try:
        await parser(html_response(PAGE))
        stdin = parser._workers[0].process.stdin
        assert stdin is not None
        fd = stdin.transport.get_extra_info("pipe").fileno()
        assert fcntl.fcntl(fd, 1032) == 1 << 20  # F_GETPIPE_SZ
    finally:
        await parser.close()
