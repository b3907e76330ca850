"""The render policy: which fetched pages are script shells (pure, no I/O)."""

from __future__ import annotations

import pytest

from topicrawl.render.detect import RenderMode, RenderPolicy, Signal, visible_chars

AUTO = RenderPolicy(mode=RenderMode.AUTO)
TEXT = (
    b"<p>" + b"Threads share the heap of their process and synchronise on monitors. " * 20 + b"</p>"
)


def _page(body: bytes, head: bytes = b"<script src='/app.js'></script>") -> bytes:
    return (
        b"<!DOCTYPE html><html><head><title>t</title>"
        + head
        + b"</head><body>"
        + body
        + b"</body></html>"
    )


def test_an_empty_app_root_with_a_script_is_rendered() -> None:
    decision = AUTO.decide("http://a/", "text/html", _page(b'<div id="root"></div>'))
    assert decision.render
    assert Signal.EMPTY_ROOT in decision.signals
    assert Signal.LITTLE_TEXT in decision.signals


def test_a_noscript_hint_and_little_text_is_rendered() -> None:
    body = b"<p>Loading</p><noscript>You need to enable JavaScript to run this app.</noscript>"
    decision = AUTO.decide("http://a/", "text/html", _page(body))
    assert decision.render
    assert Signal.NOSCRIPT in decision.signals


@pytest.mark.parametrize(
    "marker",
    [
        b'<script id="__NEXT_DATA__" type="application/json">{}</script>',
        b'<app-root ng-version="17.0.0"><p>Loading the shop</p></app-root>',
        b'<div data-reactroot=""><p>Loading</p></div>',
        b"<script>window.__NUXT__={}</script>",
    ],
)
def test_framework_markers_with_little_text_are_rendered(marker: bytes) -> None:
    decision = AUTO.decide("http://a/", "text/html", _page(marker + b"<p>a short teaser text</p>"))
    assert decision.render
    assert Signal.FRAMEWORK in decision.signals


def test_a_server_rendered_framework_page_with_its_text_is_not_rendered() -> None:
    page = _page(
        b'<div id="__next">' + TEXT * 2 + b"</div>", b'<script id="__NEXT_DATA__">{}</script>'
    )
    assert not AUTO.decide("http://a/", "text/html", page).render


def test_a_page_with_text_and_scripts_is_not_rendered() -> None:
    assert not AUTO.decide("http://a/", "text/html", _page(TEXT)).render


def test_a_page_without_scripts_is_never_rendered_in_auto() -> None:
    assert not AUTO.decide("http://a/", "text/html", _page(b'<div id="app"></div>', b"")).render


def test_script_and_style_text_does_not_count_as_text() -> None:
    hidden = b"<script>" + b"var x = 1;" * 500 + b"</script><style>" + b"p{}" * 500 + b"</style>"
    decision = AUTO.decide("http://a/", "text/html", _page(hidden + b"<p>hi</p>"))
    assert decision.render
    assert decision.text_chars == 2


def test_never_renders_nothing_and_always_every_html_page() -> None:
    shell = _page(b'<div id="root"></div>')
    assert not RenderPolicy().decide("http://a/", "text/html", shell).render
    always = RenderPolicy(mode=RenderMode.ALWAYS)
    assert always.decide("http://a/", "text/html", _page(TEXT)).render
    assert not always.decide("http://a/x.json", "application/json", b"{}").render


def test_a_site_rule_renders_a_page_that_looks_complete() -> None:
    policy = RenderPolicy(mode=RenderMode.AUTO, site_rules=(r"^https?://shop\.example/",))
    decision = policy.decide("https://shop.example/item/1", "text/html", _page(TEXT))
    assert decision.render
    assert decision.signals == (Signal.SITE_RULE,)
    assert not policy.decide("https://other.example/", "text/html", _page(TEXT)).render


def test_entities_count_as_one_character_and_white_space_not_at_all() -> None:
    assert visible_chars(b"<body><p>a &amp; b</p>\n\n   <p> c </p></body>", stop_at=100) == 4


def test_thousands_of_unclosed_scripts_end_the_count_instead_of_rescanning() -> None:
    hostile = b"<body><p>abc</p>" + b"<script " * 200_000
    assert visible_chars(hostile, stop_at=1000) == 3
    comments = b"<body>" + b"<!--" * 200_000
    assert visible_chars(comments, stop_at=1000) == 0


def test_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="min_text"):
        RenderPolicy(min_text=500, hinted_text=100)
