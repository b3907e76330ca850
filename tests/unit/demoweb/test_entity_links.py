"""The demo web links related pages through the entities they name (issue #20)."""

from __future__ import annotations

from topicrawl.demoweb import TOPICS, DemoWeb
from topicrawl.demoweb.model import Kind

_SITE = {Kind.HOME, Kind.SECTION, Kind.ARTICLE, Kind.UTILITY, Kind.PRIVATE}


def _web(seed: int = 11) -> DemoWeb:
    return DemoWeb.generate(seed=seed, hosts=4, pages_per_host=25, crawl_delay=0.0)


def test_every_site_page_naming_an_entity_is_linked_by_its_name_from_a_page_naming_it() -> None:
    web = _web()
    names = {n for t in TOPICS for n in (*t.en.entities, *t.zh.entities)}
    pages = [p for p in web.pages if p.is_document]
    linked = {
        (link.host, link.target, link.anchor)
        for page in pages
        for link in page.links
        if link.block == "body" and link.anchor in names and link.anchor in page.text
    }
    checked = 0
    for page in pages:
        if page.kind not in _SITE or page.duplicate_of or page.path.startswith("/ads/"):
            continue
        if page.path.startswith("/private/") and page.path != "/private/press-kit.html":
            continue  # robots.txt keeps crawlers out: nothing links them
        for name in names:
            articles = [p for p in pages if p.kind is Kind.ARTICLE and name in p.text]
            if name in page.text and set(articles) - {page}:
                checked += 1
                assert (page.host, page.path, name) in linked, (name, page.path)
    assert checked > 100


def test_entity_links_sit_in_the_paragraph_that_names_the_entity_and_follow_the_seed() -> None:
    web, again = _web(), _web()
    assert web.pages == again.pages
    names = {n for t in TOPICS for n in (*t.en.entities, *t.zh.entities)}
    for page in web.pages:
        sep = "" if page.lang == "zh" else " "
        for link in page.links:
            if link.block == "body" and link.anchor in names:
                assert page.kind is Kind.ARTICLE
                texts = [sep.join(sentences) for sentences in page.paragraphs]
                first = next((i for i, t in enumerate(texts) if link.anchor in t), None)
                if first is None:  # only the title names it
                    assert link.anchor in page.title
                    assert link.paragraph == 0
                else:
                    assert link.paragraph == first
