"""parse_html: title, text, language, canonical URL, robots meta and links."""

from __future__ import annotations

import pytest

from topicrawl.core.models import Link
from topicrawl.parse.html import (
    MAX_ANCHOR_CHARS,
    MAX_LINKS,
    MAX_TEXT_CHARS,
    MAX_TITLE_CHARS,
    parse_html,
)

PAGE = "https://www.example.org/news/2024/solar.html"


def page(body: str, head: str = "", *, url: str = PAGE, html_attrs: str = "") -> str:
    return f"<!doctype html><html{html_attrs}><head>{head}</head><body>{body}</body></html>"


def urls(html: str, *, url: str = PAGE) -> list[str]:
    return [link.url for link in parse_html(html, url=url).links]


# --- title -------------------------------------------------------------------------------


def test_title_is_whitespace_collapsed() -> None:
    parsed = parse_html(page("", "<title>\n  Solar \t power\n news  </title>"), url=PAGE)
    assert parsed.title == "Solar power news"


def test_title_missing_is_empty() -> None:
    assert parse_html(page("<p>hi</p>"), url=PAGE).title == ""


def test_title_is_capped() -> None:
    parsed = parse_html(page("", f"<title>{'word ' * 1000}</title>"), url=PAGE)
    assert len(parsed.title) <= MAX_TITLE_CHARS
    assert parsed.title.startswith("word word")
    assert not parsed.title.endswith(" ")


def test_svg_title_is_not_the_page_title() -> None:
    html = page("<svg><title>icon</title></svg><p>x</p>", "<title>Real</title>")
    assert parse_html(html, url=PAGE).title == "Real"
    only_svg = page("<svg><title>icon</title></svg><p>x</p>")
    assert parse_html(only_svg, url=PAGE).title == ""


def test_first_title_wins_and_entities_decode() -> None:
    html = page("", "<title>Fish &amp; Chips</title><title>Second</title>")
    assert parse_html(html, url=PAGE).title == "Fish & Chips"


# --- text --------------------------------------------------------------------------------


def test_text_keeps_block_boundaries_as_lines() -> None:
    html = page(
        "<h1>Solar</h1><p>First   paragraph\n spans lines.</p><div>Second<br>line</div>"
        "<ul><li>one</li><li>two</li></ul><table><tr><td>a</td><td>b</td></tr></table>"
    )
    assert parse_html(html, url=PAGE).text == (
        "Solar\nFirst paragraph spans lines.\nSecond\nline\none\ntwo\na\nb"
    )


def test_main_is_where_the_main_elements_text_is_when_asked() -> None:
    html = page(
        "<header><p>Site <b>Menu</b></p><nav><a href='/a'>Home</a></nav></header>"
        "<main><h1>Solar</h1><p>Panels <i>work</i>.</p><div>Home</div></main>"
        "<footer><p>Home</p></footer>"
    )
    parsed = parse_html(html, url=PAGE, find_main=True)
    assert parsed.main is not None
    start, end = parsed.main
    assert parsed.text[start:end] == "Solar\nPanels work.\nHome"
    assert parsed.text[:start] == "Site Menu\nHome\n"
    assert parsed.text[end:] == "\nHome"
    assert parse_html(html, url=PAGE).main is None  # not asked


@pytest.mark.parametrize(
    "body",
    [
        "<p>No main here</p>",
        "<main><p>one</p></main><main><p>two</p></main>",  # which one? neither
        "<main><img src='x.png'></main><p>text</p>",  # empty
    ],
)
def test_main_is_none_without_one_main_with_text(body: str) -> None:
    assert parse_html(page(body), url=PAGE, find_main=True).main is None


@pytest.mark.parametrize(
    ("body", "inside"),
    [
        ("<main>  a <b>b</b>  </main>", "a b"),
        ("<p>x</p><main>a</main>", "a"),
        ("head<main> lead <p>p</p> trail </main>tail", "lead\np\ntrail"),
        ("<main><p>a</p>  </main><p>z</p>", "a"),
        ("x<main> </main>y", None),
        ("<main>\n<article><h1>T</h1></article>\n</main>\n<footer>f</footer>", "T"),
    ],
)
def test_finding_main_leaves_the_text_as_it_is(body: str, inside: str | None) -> None:
    found = parse_html(page(body), url=PAGE, find_main=True)
    assert found.text == parse_html(page(body), url=PAGE).text
    assert (found.text[found.main[0] : found.main[1]] if found.main else None) == inside


def test_a_page_with_the_mark_characters_gets_no_main() -> None:
    found = parse_html(page("<main>a\x01b</main><p>c</p>"), url=PAGE, find_main=True)
    assert found.main is None
    assert found.text == parse_html(page("<main>a\x01b</main><p>c</p>"), url=PAGE).text


def test_main_range_starts_and_ends_on_line_boundaries() -> None:
    # The main text's line also ends a line of the header: the match must be the whole line.
    html = page("<header><p>Big Solar</p></header><main><p>Solar</p></main>")
    parsed = parse_html(html, url=PAGE, find_main=True)
    assert parsed.text == "Big Solar\nSolar"
    assert parsed.main == (10, 15)


def test_inline_elements_join_their_neighbours() -> None:
    html = page(
        "<p>Solar <b>power</b> is grow<i>ing</i> fast: see <a href='/x'>the <em>report</em></a>"
        ".</p><p>Char<wbr>Sequence and <span></span>List<code>&lt;E&gt;</code></p>"
    )
    assert parse_html(html, url=PAGE).text == (
        "Solar power is growing fast: see the report.\nCharSequence and List<E>"
    )


def test_invisible_content_is_dropped() -> None:
    html = page(
        "<p>visible</p><script>var hidden = 1;</script><style>p{color:red}</style>"
        "<noscript>enable js</noscript><template><p>templated</p></template>"
        "<svg><text>drawn</text></svg><iframe>framed</iframe><p>also visible</p>",
        "<title>The title</title><style>x{}</style>",
    )
    assert parse_html(html, url=PAGE).text == "visible\nalso visible"


def test_non_breaking_and_unicode_spaces_collapse() -> None:
    html = page("<p>a&nbsp;&nbsp;b\u2003c</p><p>&nbsp;</p><p>d</p>")
    assert parse_html(html, url=PAGE).text == "a b c\nd"


def test_text_is_capped() -> None:
    html = page("<p>" + "word " * 300_000 + "</p>")
    text = parse_html(html, url=PAGE).text
    assert len(text) <= MAX_TEXT_CHARS
    assert text.startswith("word word")


def test_empty_document() -> None:
    parsed = parse_html("", url=PAGE)
    assert (parsed.title, parsed.text, parsed.links, parsed.lang) == ("", "", (), None)


# --- lang, canonical, robots ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("attrs", "lang"),
    [
        (' lang="en-GB"', "en-gb"),
        (" lang=' de '", "de"),
        (' lang="zh_Hant_TW"', "zh-hant-tw"),
        ("", None),
        (' lang=""', None),
        (' lang="not a language"', None),
        (' xml:lang="fr"', "fr"),
    ],
)
def test_lang(attrs: str, lang: str | None) -> None:
    assert parse_html(page("<p>x</p>", html_attrs=attrs), url=PAGE).lang == lang


def test_canonical_is_resolved_and_canonicalised() -> None:
    head = '<link rel="Canonical" href="../solar.html?utm_source=feed&b=2&a=1#top">'
    parsed = parse_html(page("", head), url=PAGE)
    assert parsed.canonical == "https://www.example.org/news/solar.html?a=1&b=2"


def test_canonical_among_other_rels_and_invalid() -> None:
    head = '<link rel="stylesheet" href="/s.css"><link rel="alternate canonical" href="/c">'
    assert parse_html(page("", head), url=PAGE).canonical == "https://www.example.org/c"
    bad = '<link rel="canonical" href="javascript:alert(1)">'
    assert parse_html(page("", bad), url=PAGE).canonical is None
    assert parse_html(page(""), url=PAGE).canonical is None


@pytest.mark.parametrize(
    ("meta", "noindex", "nofollow"),
    [
        ('<meta name="robots" content="noindex">', True, False),
        ('<meta name="ROBOTS" content="NOFOLLOW">', False, True),
        ('<meta name="robots" content="noindex,nofollow">', True, True),
        ('<meta name="robots" content="none">', True, True),
        ('<meta name="robots" content="index, follow">', False, False),
        ('<meta name="googlebot" content="noindex, nofollow">', False, False),
        ('<meta name="description" content="noindex">', False, False),
        ("", False, False),
    ],
)
def test_meta_robots(meta: str, noindex: bool, nofollow: bool) -> None:
    parsed = parse_html(page('<a href="/a">a</a>', meta), url=PAGE)
    assert (parsed.noindex, parsed.nofollow) == (noindex, nofollow)
    assert parsed.links[0].nofollow is nofollow


# --- link resolution -------------------------------------------------------------------------


def test_relative_links_resolve_against_the_page() -> None:
    html = page(
        '<a href="wind.html">w</a><a href="./hydro.html">h</a><a href="../index.html">i</a>'
        '<a href="../../../../up.html">u</a><a href="/about">a</a><a href="?page=2">p</a>'
        '<a href="//cdn.example.net/file">c</a><a href="sub/">s</a>'
    )
    assert urls(html) == [
        "https://www.example.org/news/2024/wind.html",
        "https://www.example.org/news/2024/hydro.html",
        "https://www.example.org/news/index.html",
        "https://www.example.org/up.html",
        "https://www.example.org/about",
        "https://www.example.org/news/2024/solar.html?page=2",
        "https://cdn.example.net/file",
        "https://www.example.org/news/2024/sub/",
    ]


def test_base_href_changes_the_resolution() -> None:
    html = page('<a href="wind.html">w</a><a href="../x">x</a>', '<base href="/docs/v2/">')
    assert urls(html) == [
        "https://www.example.org/docs/v2/wind.html",
        "https://www.example.org/docs/x",
    ]
    other_host = page('<a href="a">a</a>', '<base href="http://mirror.example.com/m/">')
    assert urls(other_host) == ["http://mirror.example.com/m/a"]
    # Only the first <base href> counts; a base that is no http(s) URL is ignored.
    two = page('<a href="a">a</a>', '<base target="_top"><base href="/one/"><base href="/two/">')
    assert urls(two) == ["https://www.example.org/one/a"]
    bad = page('<a href="a">a</a>', '<base href="javascript:void(0)">')
    assert urls(bad) == ["https://www.example.org/news/2024/a"]


def test_fragments_are_dropped_and_fragment_only_links_skipped() -> None:
    html = page(
        '<a href="#top">top</a><a href="">self</a><a href="#">hash</a>'
        '<a href="wind.html#section-2">wind</a><a href="wind.html#other">wind again</a>'
    )
    assert urls(html) == ["https://www.example.org/news/2024/wind.html"]


def test_urls_are_canonical() -> None:
    html = page(
        '<a href="HTTP://WWW.Example.ORG:80/A/B?z=1&utm_campaign=x&a=2&fbclid=y">1</a>'
        '<a href="https://example.org:443">2</a><a href="/%7Euser/a%20b">3</a>'
        '<a href="http://bücher.example/">4</a>'
    )
    assert urls(html) == [
        "http://www.example.org/A/B?a=2&z=1",
        "https://example.org/",
        "https://www.example.org/~user/a%20b",
        "http://xn--bcher-kva.example/",
    ]


@pytest.mark.parametrize(
    "href",
    [
        "javascript:void(0)",
        " JavaScript:alert(1)",
        "java\nscript:alert(1)",
        "mailto:someone@example.org",
        "tel:+441234",
        "data:text/html,<p>x</p>",
        "ftp://example.org/file",
        "http://[::1",
        "http://example.org:99999/",
        "http://",
        "x" * 5000,
    ],
)
def test_unfollowable_hrefs_are_skipped(href: str) -> None:
    html = page(f'<a href="{href}">bad</a><a href="/ok">ok</a>')
    assert urls(html) == ["https://www.example.org/ok"]


def test_whitespace_in_hrefs_is_removed_like_browsers_do() -> None:
    html = page('<a href="  /a\n/b\t.html  ">x</a><a href="\n">empty</a>')
    assert urls(html) == ["https://www.example.org/a/b.html"]


def test_links_without_a_valid_page_url_keep_only_absolute_hrefs() -> None:
    html = page('<a href="/relative">r</a><a href="https://example.org/abs">a</a>')
    assert urls(html, url="not a url") == ["https://example.org/abs"]


def test_area_and_anchor_elements_but_not_other_hrefs() -> None:
    html = page(
        '<link href="/style.css"><map name="m"><area href="/region" alt="Region"></map>'
        '<a>no href</a><a href="/a">a</a><img src="/img.png">'
    )
    parsed = parse_html(html, url=PAGE)
    assert [(link.url, link.anchor) for link in parsed.links] == [
        ("https://www.example.org/region", "Region"),
        ("https://www.example.org/a", "a"),
    ]


def test_links_in_invisible_elements_are_skipped() -> None:
    html = page(
        '<script>document.write("<a href=/s>s</a>")</script><svg><a href="/svg">s</a></svg>'
        '<template><a href="/t">t</a></template><noscript><a href="/n">n</a></noscript>'
        '<a href="/visible">v</a>'
    )
    assert urls(html) == ["https://www.example.org/visible"]


# --- anchors, nofollow, de-duplication -----------------------------------------------------


def test_anchor_text_and_its_fallbacks() -> None:
    html = page(
        '<a href="/1">  Solar\n <b>power</b> </a>'
        '<a href="/2"><img src="i.png" alt="  Wind  turbines "></a>'
        '<a href="/3" title="Privacy policy"><span class="icon"></span></a>'
        '<a href="/4"><img src="i.png"></a>'
        '<a href="/5"><h3>Card title</h3><p>Card summary</p></a>'
    )
    anchors = [link.anchor for link in parse_html(html, url=PAGE).links]
    assert anchors == [
        "Solar power",
        "Wind turbines",
        "Privacy policy",
        "",
        "Card title Card summary",
    ]


def test_anchor_text_is_capped() -> None:
    html = page(f'<a href="/long">{"word " * 500}</a>')
    anchor = parse_html(html, url=PAGE).links[0].anchor
    assert len(anchor) <= MAX_ANCHOR_CHARS
    assert anchor.startswith("word word")


def test_rel_nofollow_per_link() -> None:
    html = page(
        '<a href="/a" rel="nofollow">a</a><a href="/b" rel="noopener NoFollow">b</a>'
        '<a href="/c" rel="noopener">c</a><a href="/d">d</a>'
    )
    links = parse_html(html, url=PAGE).links
    assert [link.nofollow for link in links] == [True, True, False, False]
    assert parse_html(html, url=PAGE).nofollow is False


def test_duplicates_keep_first_position_and_richest_anchor() -> None:
    html = page(
        '<nav><a href="/solar" rel="nofollow">More</a><a href="/wind">Wind</a></nav>'
        '<p><a href="/solar#x">Solar power prices in 2024</a><a href="/SOLAR">S</a>'
        '<a href="/wind" rel="nofollow">W</a></p>'
    )
    links = parse_html(html, url=PAGE).links
    assert [(link.url, link.anchor, link.block, link.nofollow) for link in links] == [
        ("https://www.example.org/solar", "Solar power prices in 2024", 0, False),
        ("https://www.example.org/wind", "Wind", 0, False),
        ("https://www.example.org/SOLAR", "S", 1, False),
    ]


def test_links_are_capped_per_page() -> None:
    html = page("".join(f'<a href="/p{i}">{i}</a>' for i in range(MAX_LINKS + 100)))
    links = parse_html(html, url=PAGE).links
    assert len(links) == MAX_LINKS
    assert links[-1].url == f"https://www.example.org/p{MAX_LINKS - 1}"


# --- link blocks -------------------------------------------------------------------------------

REALISTIC = """<!doctype html>
<html lang="en"><head><title>Solar power prices fall | Energy News</title></head>
<body>
<header class="site">
  <a href="/" class="logo"><img src="/logo.png" alt="Energy News"></a>
  <nav>
    <ul class="menu">
      <li><a href="/solar/">Solar</a></li>
      <li><a href="/wind/">Wind</a>
        <ul class="sub"><li><a href="/wind/offshore/">Offshore wind</a></li></ul>
      </li>
      <li><a href="/storage/">Storage</a></li>
    </ul>
  </nav>
</header>
<main>
  <article>
    <h1>Solar power prices fall</h1>
    <p>Module prices fell again, says the <a href="https://iea.example/report">IEA report</a>,
       while <a href="/storage/batteries">battery storage</a> grew.</p>
    <p>No links in this paragraph.</p>
    <h2>Related</h2>
    <ul class="related">
      <li><a href="/solar/rooftop">Rooftop solar guide</a></li>
      <li><a href="/solar/">Solar news</a></li>
    </ul>
    <table><tr><td><a href="/data/prices.csv">Prices CSV</a></td>
               <td><a href="/data/capacity.csv">Capacity CSV</a></td></tr></table>
  </article>
</main>
<footer><p><a href="/privacy">Privacy</a> · <a href="/contact">Contact</a></p></footer>
</body></html>"""


def test_link_blocks_on_a_realistic_page() -> None:
    parsed = parse_html(REALISTIC, url="https://news.example.org/solar/prices-fall")
    got = [(link.url.removeprefix("https://news.example.org"), link.block) for link in parsed.links]
    assert got == [
        ("/", 0),  # the logo sits directly in <header>
        ("/solar/", 1),  # the menu list
        ("/wind/", 1),
        ("/wind/offshore/", 2),  # the nested sub-menu is a list of its own
        ("/storage/", 1),
        ("https://iea.example/report", 3),  # the body paragraph
        ("/storage/batteries", 3),
        ("/solar/rooftop", 4),  # the related list; "/solar/" is a repeat of the menu link
        ("/data/prices.csv", 5),  # one table: its cells share a block
        ("/data/capacity.csv", 5),
        ("/privacy", 6),  # the footer paragraph
        ("/contact", 6),
    ]
    by_block = {link.block: link.block_text for link in parsed.links}
    assert by_block == {
        0: "Energy News",
        1: "Solar | Wind | Storage",
        2: "Offshore wind",
        3: "IEA report | battery storage",
        4: "Rooftop solar guide | Solar news",
        5: "Prices CSV | Capacity CSV",
        6: "Privacy | Contact",
    }
    # The repeated link keeps its first place, but its richer anchor from the related list.
    solar = next(link for link in parsed.links if link.url.endswith("/solar/"))
    assert solar == Link(
        url="https://news.example.org/solar/",
        anchor="Solar news",
        block=1,
        block_text="Solar | Wind | Storage",
    )


def test_block_containers_and_non_containers() -> None:
    html = page(
        '<div><a href="/d1">d1</a><span><em><a href="/d2">d2</a></em></span></div>'
        '<dl><dt><a href="/t">term</a></dt><dd><a href="/d">def</a></dd></dl>'
        '<section><h2><a href="/h">heading</a></h2><a href="/s">s</a></section>'
        '<a href="/top">top level</a>'
    )
    links = parse_html(html, url=PAGE).links
    assert [(link.anchor, link.block) for link in links] == [
        ("d1", 0),
        ("d2", 0),
        ("term", 1),
        ("def", 1),
        ("heading", 2),
        ("s", 2),
        ("top level", 3),
    ]
    assert links[-1].block_text == "top level"


def test_block_text_repeats_nothing_and_is_capped() -> None:
    html = page(
        "<ul>"
        + '<li><a href="/a">Same</a></li><li><a href="/b">Same</a></li>'
        + "".join(f'<li><a href="/x{i}">{"long anchor text " * 5}{i}</a></li>' for i in range(200))
        + "</ul>"
    )
    links = parse_html(html, url=PAGE).links
    assert links[0].block_text.startswith("Same | long anchor text")
    assert 1900 < len(links[0].block_text) <= 2000
    assert {link.block_text for link in links} == {links[0].block_text}


def test_long_hrefs_resolve_like_short_ones() -> None:
    # Long hrefs bypass the resolution caches; they must resolve the same way.
    segment = "chapter-" + "x" * 600
    html = page(f'<a href="../{segment}/p.html?utm_source=a&b=1#f">long</a>')
    assert urls(html) == [f"https://www.example.org/news/{segment}/p.html?b=1"]
    assert urls(page(f'<a href="?{segment}=1">q</a>')) == [f"{PAGE}?{segment}=1"]
