"""The browser pool in the real Chromium: script-built DOMs, caps, crashes and restarts."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable

import psutil
import pytest

from tests.integration.render.conftest import SHELL, Site
from topicrawl.core.errors import RenderFailed
from topicrawl.core.models import ErrorKind
from topicrawl.render import BrowserPool
from topicrawl.render import pool as pool_module

MakePool = Callable[..., BrowserPool]


async def test_a_script_built_dom_is_returned_with_its_links(
    site: Site, make_pool: MakePool
) -> None:
    pool = make_pool()
    rendered = await pool.render(site.url("/"), SHELL)
    for path in ("/a.html", "/b.html", "/c.html"):
        assert f'href="{path}"' in rendered.html
    assert rendered.loaded == 2  # app.js and links.json
    # The document itself came from the bytes handed over, not from a second request.
    assert ("GET", "/") not in site.seen


async def test_images_styles_fonts_and_posts_never_leave_the_browser(
    site: Site, make_pool: MakePool
) -> None:
    page = (
        b"<html><head><link rel=stylesheet href='/s.css'>"
        b"<style>@font-face{font-family:f;src:url(/f.woff2)} p{font-family:f}</style></head>"
        b"<body><p>text</p><img src='/i.png'><video src='/v.mp4' autoplay></video>"
        b"<iframe src='/frame.html'></iframe>"
        b"<script>fetch('/post', {method: 'POST', body: 'x'}).catch(() => 0);"
        b"fetch('/get.json').catch(() => 0);</script></body></html>"
    )
    pool = make_pool()
    rendered = await pool.render(site.url("/page"), page)
    paths = {path for _, path in site.seen}
    assert paths == {"/get.json"}
    assert rendered.aborted >= 5
    assert pool.counts["requests/blocked_type"] >= 3
    assert pool.counts["requests/blocked_method"] == 1


async def test_a_page_that_never_finishes_loading_fails_at_its_cap(
    site: Site, make_pool: MakePool
) -> None:
    pool = make_pool(page_timeout=6.0, resource_timeout=60.0)
    hanging = b"<html><head><script src='/hang.js'></script></head><body>x</body></html>"
    with pytest.raises(RenderFailed) as failed:
        await pool.render(site.url("/hanging"), hanging)
    assert failed.value.kind is ErrorKind.TIMEOUT
    # The pool goes on rendering.
    assert 'href="/a.html"' in (await pool.render(site.url("/"), SHELL)).html


async def test_a_busy_looping_script_fails_at_the_cap_and_the_pool_goes_on(
    site: Site, make_pool: MakePool
) -> None:
    pool = make_pool(page_timeout=6.0)
    busy = b"<html><body><p>x</p><script>while (true) {}</script></body></html>"
    with pytest.raises(RenderFailed) as failed:
        await pool.render(site.url("/busy"), busy)
    assert failed.value.kind is ErrorKind.TIMEOUT
    assert 'href="/b.html"' in (await pool.render(site.url("/"), SHELL)).html


def _renderers(browser_pid: int) -> list[psutil.Process]:
    children = psutil.Process(browser_pid).children(recursive=True)
    return [c for c in children if "--type=renderer" in " ".join(c.cmdline())]


async def test_a_crashed_renderer_fails_its_page_and_the_browser_is_replaced(
    site: Site, make_pool: MakePool
) -> None:
    pool = make_pool(page_timeout=30.0, resource_timeout=30.0)
    await pool.render(site.url("/"), SHELL)  # the browser is up
    pid = pool.browser_pid()
    assert pid is not None
    slow = b"<html><head><script src='/hang.js'></script></head><body>x</body></html>"
    rendering = asyncio.create_task(pool.render(site.url("/crash"), slow))
    while ("GET", "/hang.js") not in site.seen:  # the page is loading in its renderer
        await asyncio.sleep(0.05)
    for renderer in _renderers(pid):
        renderer.kill()
    with pytest.raises(RenderFailed) as failed:
        await rendering
    assert failed.value.kind is ErrorKind.RENDER
    assert pool.counts["renders/crashed"] == 1
    assert 'href="/c.html"' in (await pool.render(site.url("/"), SHELL)).html
    assert pool.launches == 2
    assert pool.browser_pid() != pid


async def test_a_killed_browser_is_restarted_and_its_pages_rendered_again(
    site: Site, make_pool: MakePool
) -> None:
    pool = make_pool(page_timeout=30.0)
    await pool.render(site.url("/"), SHELL)
    pid = pool.browser_pid()
    assert pid is not None
    slow = b"<html><head><script src='/slow.js'></script></head><body><p>x</p></body></html>"
    rendering = asyncio.create_task(pool.render(site.url("/slow"), slow))
    while ("GET", "/slow.js") not in site.seen:
        await asyncio.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    rendered = await rendering  # not the page's fault: rendered again in a new browser
    assert "slow done" in rendered.html
    assert pool.launches == 2
    assert pool.counts["browser/restarts"] == 1


async def test_the_browser_is_recycled_after_its_renders(site: Site, make_pool: MakePool) -> None:
    pool = make_pool(recycle_after=3)
    browsers = []
    for _ in range(7):
        await pool.render(site.url("/"), SHELL)
        browsers.append(pool.browser_pid())
    assert pool.launches == 3
    assert pool.counts["browser/recycled"] == 2
    assert len(set(browsers)) == 3
    retired = set(browsers) - {pool.browser_pid()}
    for _ in range(100):  # they close in the background once their last page is done
        if not any(_alive(pid) for pid in retired):
            break
        await asyncio.sleep(0.1)
    assert not any(_alive(pid) for pid in retired)


def _alive(pid: int | None) -> bool:
    try:
        return pid is not None and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def test_a_missing_chromium_is_a_clear_error(site: Site, make_pool: MakePool) -> None:
    pool = make_pool(executable="/nonexistent/chromium")
    with pytest.raises(RenderFailed, match="no Chromium at /nonexistent/chromium"):
        await pool.render(site.url("/"), SHELL)


async def test_a_kept_page_runs_nothing_between_renders(site: Site, make_pool: MakePool) -> None:
    """A page is kept for the next render and frozen meanwhile: its timers stop."""
    pool = make_pool(settle=0.1)
    ticking = (
        b"<html><body><p>tick</p><script>"
        b"setInterval(() => fetch('/tick.json').catch(() => 0), 400);</script></body></html>"
    )
    await pool.render(site.url("/ticking"), ticking)
    ticks = sum(path == "/tick.json" for _, path in site.seen)
    await asyncio.sleep(2.0)  # five ticks, were it running
    assert pool.counts["requests/between_renders"] == 0
    assert sum(path == "/tick.json" for _, path in site.seen) == ticks
    # The frozen page renders the next document as any page does.
    rendered = await pool.render(site.url("/"), SHELL)
    assert 'href="/a.html"' in rendered.html
    assert pool.launches == 1


async def test_the_browser_is_recycled_when_over_its_memory_cap(
    site: Site, make_pool: MakePool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool_module, "_MEMORY_CHECK_EVERY", 2)
    pool = make_pool(recycle_mb=1)  # any browser is over 1 MB
    for _ in range(5):
        assert 'href="/a.html"' in (await pool.render(site.url("/"), SHELL)).html
    assert pool.counts["browser/recycled_memory"] == 2
    assert pool.launches == 3
    # Under a cap it does not reach, a browser lives on.
    pool = make_pool(recycle_mb=100_000)
    for _ in range(5):
        await pool.render(site.url("/"), SHELL)
    assert pool.launches == 1


async def test_a_renderer_over_its_heap_cap_crashes_its_page_alone(
    site: Site, make_pool: MakePool
) -> None:
    """A script that allocates without end crashes its renderer at ``heap_mb`` (no one kills
    it from outside): the page fails as a crash, and the pool renders on in a new browser."""
    pool = make_pool(heap_mb=32, page_timeout=60.0)
    greedy = (
        b"<html><body><p>x</p><script>const kept = [];"
        b"for (;;) { kept.push(new Array(1 << 20).fill(kept.length)); }</script></body></html>"
    )
    with pytest.raises(RenderFailed) as failed:
        await pool.render(site.url("/greedy"), greedy)
    assert failed.value.kind is ErrorKind.RENDER
    assert pool.counts["renders/crashed"] == 1
    assert 'href="/a.html"' in (await pool.render(site.url("/"), SHELL)).html
    assert pool.launches == 2
