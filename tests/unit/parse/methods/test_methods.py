"""Each extraction method on hand-made pages, and structured data under its time budget."""

from __future__ import annotations

import tomllib

import lxml.html

from topicrawl.parse.methods import Hint, config_from_mapping, extract
from topicrawl.parse.methods.relocate import fingerprint_of, relocate
from topicrawl.parse.methods.rules import apply_rule
from topicrawl.parse.methods.structured import extract_structured, lookup

from .pages import FILM, SCHEMA_TOML, page

CONFIG = config_from_mapping(tomllib.loads(SCHEMA_TOML))
SCHEMA = CONFIG.schemas[0]
URL = "https://filmsite.com/film/1.html"


def test_structured_data_paths_pick_fields_out_of_json_ld() -> None:
    html = page("jsonld")
    data = extract_structured(lxml.html.fromstring(html), len(html))
    assert lookup(data, "name") == FILM["title"]
    assert lookup(data, "actor.name") == FILM["actors"]
    watch = "interactionStatistic[interactionType=WatchAction].userInteractionCount"
    assert lookup(data, watch) == str(FILM["plays"])
    assert lookup(data, "missing.path") is None


def test_open_graph_and_microdata() -> None:
    html = (
        "<html><head><meta property='og:title' content='OG Title'></head><body>"
        "<div itemscope itemtype='https://schema.org/Movie'><span itemprop='name'>MD</span>"
        "</div></body></html>"
    )
    data = extract_structured(lxml.html.fromstring(html), len(html))
    assert lookup(data, "og:title") == "OG Title"
    assert lookup(data, "name") == "MD"


def test_rules_in_css_and_xpath() -> None:
    tree = lxml.html.fromstring(page("v1"))
    assert apply_rule(tree, "css:h1.film-title::text", many=False) == FILM["title"]
    assert apply_rule(tree, "xpath://ul[@class='actors']/li/text()", many=True) == FILM["actors"]
    assert apply_rule(tree, "css:.director", many=False) == FILM["director"]  # element -> text
    assert apply_rule(tree, "css:.nothing", many=False) is None


def test_main_text_metadata_method() -> None:
    toml = SCHEMA_TOML.replace('rule = "css:h1.film-title::text"', 'metadata = "title"')
    toml = toml.replace('required = true\nstructured = ["interaction', 'structured = ["interaction')
    config = config_from_mapping(tomllib.loads(toml))
    body = "<p>" + "A long review of the film with enough words to be main text. " * 20 + "</p>"
    head = "<head><title>The Quiet Harbour</title></head>"
    html = f"<html>{head}<body><article>{body}</article></body></html>"
    outcome = extract(html, URL, config.schemas[0], Hint("film", "p"))
    assert outcome.method == "maintext"
    assert outcome.record is not None
    assert outcome.record["title"] == "The Quiet Harbour"


def test_relocation_finds_a_renamed_element_by_its_label() -> None:
    old = lxml.html.fromstring(page("v1"))
    (element,) = old.xpath("//span[@class='plays']")
    fp = fingerprint_of(element)
    new = lxml.html.fromstring(page("cosmetic", shown_plays="2.5M"))
    assert relocate(new, [fp]) == "2.5M"
    # A page without anything like it gives nothing rather than a guess.
    assert relocate(lxml.html.fromstring("<html><body><p>hi</p></body></html>"), [fp]) is None


def _hostile_microdata(items: int, refs: int) -> str:
    ids = " ".join(f"p{i}" for i in range(refs))
    scopes = "".join(
        f'<div itemscope itemtype="http://schema.org/Thing" itemref="{ids}"></div>'
        for _ in range(items)
    )
    props = "".join(f'<span id="p{i}" itemprop="name">x{i}</span>' for i in range(refs))
    fields = "<h1 class='film-title'>T</h1><span class='plays'>3K</span>"
    return f"<html><body>{scopes}{props}{fields}</body></html>"


def test_hostile_structured_data_runs_out_of_budget_and_other_methods_go_on() -> None:
    # Quadratic itemref resolution: seconds of extruct for a ~0.6 MB page.
    html = _hostile_microdata(items=30, refs=3000)
    outcome = extract(html, URL, SCHEMA, Hint("film", "p"), budget=0.1)
    first = outcome.attempts[0]
    assert first.method == "structured"
    assert not first.ok
    assert first.error is not None
    assert first.error.startswith("StructuredTimeout")
    assert outcome.method == "rules"
    assert outcome.record == {"title": "T", "plays": 3000}


def test_relocation_gives_up_on_a_huge_page_instead_of_taking_long() -> None:
    old = lxml.html.fromstring(page("v1"))
    (element,) = old.xpath("//span[@class='plays']")
    fp = fingerprint_of(element)
    cells = "".join(f"<div><span>Plays</span><span>{n}</span></div>" for n in range(10_000))
    huge = lxml.html.document_fromstring(f"<html><body>{cells}</body></html>")
    assert relocate(huge, [fp]) is None
