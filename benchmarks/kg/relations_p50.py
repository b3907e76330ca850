"""Relation precision@50 on the Java API docs, judged by the docs' own structure.

The relations :class:`~topicrawl.kg.analyse.EntityAnalyzer` reads from every n-th class page
(the pages of :mod:`cpu_per_page`, with :mod:`java_kb`'s knowledge base) are ranked by their
confidence (the highest of each distinct ``(subject, relation, object)``; ties by the triple)
and the first 50 judged, and every relation typed by a pattern judged too. The gold is not
the extractor's: it is read from the subject's own class page,

- ``extends(X, Y)``: Y is in X's inheritance tree (``div.inheritance``) or among its
  superinterfaces (``All Superinterfaces:``; an interface extends interfaces);
- ``implements(X, Y)``: Y is among X's ``All Implemented Interfaces:``;
- ``part_of(X, P)``: P is the package of X's page (the title of its links says
  ``class in P``... read from the page's own header ``Package P``);
- ``related(X, Y)`` (a KB relation seen again on the page): Y is linked from X's summary in
  the class index (the KB's own source, so only a wrong link of X or Y makes it wrong);
- any other type, or an end that is a *found* (NIL) entity, is wrong.

Usage::

    python benchmarks/kg/relations_p50.py [--pages 200] [--top 50]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import urllib.request
from collections import Counter
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cpu_per_page import JAVA, java_pages
from java_kb import build

from topicrawl.core.models import RelationMention
from topicrawl.kg.analyse import EntityAnalyzer
from topicrawl.kg.kbfile import parse_kb
from topicrawl.parse.worker import parse_body

_TYPE_TITLE = re.compile(r"^\w[\w ]* in (\S+)$")
_HEADER_PACKAGE = re.compile(r"^Package\s+(\S+)$")


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        return bytes(response.read()).decode("utf-8", "replace")


def _qualified(anchor_title: str, text: str) -> str | None:
    found = _TYPE_TITLE.match(anchor_title)
    if found is None:
        return None
    package = found.group(1)
    return text if text.startswith(package + ".") else f"{package}.{text}"


class TypeFacts:
    """What a type's own class page says of it: ancestors, interfaces, package."""

    def __init__(self, html: str) -> None:
        tree = LexborHTMLParser(html)
        self.ancestors: set[str] = set()
        for anchor in tree.css("div.inheritance > a"):
            self.ancestors.add(anchor.text(strip=True))
        self.interfaces: set[str] = set()
        self.superinterfaces: set[str] = set()
        for term in tree.css("dl.notes > dt"):
            label = term.text(strip=True)
            target = {
                "All Implemented Interfaces:": self.interfaces,
                "All Superinterfaces:": self.superinterfaces,
            }.get(label)
            definition = term.next
            while definition is not None and definition.tag != "dd":
                definition = definition.next
            if target is None or definition is None:
                continue
            for anchor in definition.css("a[title]"):
                name = _qualified(anchor.attributes.get("title") or "", anchor.text(strip=True))
                if name is not None:
                    target.add(name)
        self.package = ""
        for block in tree.css("div.sub-title"):
            found = _HEADER_PACKAGE.match(" ".join(block.text().split()))
            if found is not None:
                self.package = found.group(1)


def _urls_of_types(index_html: str) -> dict[str, str]:
    """Qualified type name -> its class page URL, from the class index."""
    urls = {}
    for anchor in LexborHTMLParser(index_html).css("div.col-first a[title]"):
        name = _qualified(anchor.attributes.get("title") or "", anchor.text(strip=True))
        href = anchor.attributes.get("href")
        if name is not None and href:
            urls[name] = JAVA + href
    return urls


def judge(
    relation: RelationMention,
    facts: TypeFacts | None,
    kb_related: set[tuple[str, str]],
) -> bool:
    """Whether the docs' structure holds ``relation``."""
    subject, kind, obj = relation.subject, relation.relation, relation.object
    if subject.startswith("found:") or obj.startswith("found:") or facts is None:
        return False
    if kind == "extends":
        return obj in facts.ancestors or obj in facts.superinterfaces
    if kind == "implements":
        return obj in facts.interfaces
    if kind == "part_of":
        return obj == facts.package
    if kind == "related":
        return (subject, obj) in kb_related
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--top", type=int, default=50)
    parser.add_argument(
        "--wrong-typed", action="store_true", help="list the wrong pattern-typed relations"
    )
    parser.add_argument(
        "--whole-page",
        action="store_true",
        help="pages read whole, not their main content only (the code before session 20)",
    )
    args = parser.parse_args()
    lines = build(JAVA)
    kb = parse_kb("\n".join(json.dumps(line) for line in lines), fmt="jsonl")
    kb_related = {
        (str(line["subject"]), str(line["object"]))
        for line in lines
        if line.get("relation") == "related"
    }
    analyzer = EntityAnalyzer(kb)
    best: dict[tuple[str, str, str], RelationMention] = {}
    for url, body in java_pages(lines, args.pages):
        page = parse_body(body, url, find_main=True).page
        main = None if args.whole_page else page.main
        for relation in analyzer(page.title, page.text, main=main).relations:
            key = (relation.subject, relation.relation, relation.object)
            if key not in best or best[key].confidence < relation.confidence:
                best[key] = relation
    ranked = sorted(best.values(), key=lambda r: (-r.confidence, r.subject, r.relation, r.object))
    typed = [r for r in ranked if r.confidence >= 0.6]  # a pattern's: 0.6 + 0.4 x sureness
    urls = _urls_of_types(_get(JAVA + "allclasses-index.html"))
    facts: dict[str, TypeFacts | None] = {}

    def facts_of(key: str) -> TypeFacts | None:
        if key not in facts:
            facts[key] = TypeFacts(_get(urls[key])) if key in urls else None
        return facts[key]

    top = ranked[: args.top]
    right = [judge(r, facts_of(r.subject), kb_related) for r in top]
    typed_right = [judge(r, facts_of(r.subject), kb_related) for r in typed]
    kinds = Counter(r.relation for r in ranked)
    print(f"{len(ranked)} distinct relations on {args.pages} class pages: {dict(kinds)}")
    print(f"precision@{len(top)}: {sum(right) / max(1, len(top)):.3f} ({sum(right)}/{len(top)})")
    print(
        f"pattern-typed relations: {len(typed)}, precision"
        f" {sum(typed_right) / max(1, len(typed)):.3f} ({sum(typed_right)}/{len(typed)})"
    )
    shown = list(zip(top, right, strict=True))
    if args.wrong_typed:
        shown = [(r, ok) for r, ok in zip(typed, typed_right, strict=True) if not ok]
    for relation, ok in shown:
        mark = "ok " if ok else "BAD"
        print(
            f"  {mark} {relation.confidence:.2f} {relation.subject} {relation.relation}"
            f" {relation.object}  | {relation.evidence[:90]}"
        )


if __name__ == "__main__":
    main()
