"""Recognition and linking quality on mentions labelled by the sites' own structure.

Two labelled sets, neither made by the recogniser (issue #20's quality benchmark):

- **Java API docs (English)**: a class page's links to other types carry the gold entity in
  their markup (``<a title="interface in java.util">List</a>`` is ``java.util.List``). One
  labelled mention is a (page, anchor text, gold type) of the page's main content; pages are
  every n-th class page, and ``--english`` mentions are drawn (seeded) from them, a third of
  them, where there are enough, names that two or more types share (``List``: java.util and
  java.awt). The KB is :mod:`java_kb`'s, less every tenth type (by a hash of its name): the
  mentions of those are gold NIL.
- **Demo web (Chinese and English)**: the generator writes the demo vocabularies' names into
  its pages (``topicrawl.demoweb.text``); every occurrence of a name in a page's text is a
  labelled span, its gold entity the name's key in the demo KB (``topicrawl.demoweb.kb``), the
  KB again less every fifth name (gold NIL); and once more with a decoy for every name (the
  same name, an entity of the next topic, as likely a priori: only the page's words tell them
  apart; a left-out name's decoy stays, so its NIL mentions meet a wrong candidate). Exact
  spans are known here, so span precision is measured too (a name jieba or the
  capitalised-run rule finds that no vocabulary has counts as a false positive, though many
  are names).

Reported per set: recognition (a labelled mention found with the same surface; on the demo
web, exact spans, precision too), candidate recall@5 (the gold entity among the linker's
first five candidates for the surface, in-KB mentions only), linking precision / recall / F1
over KB entities (a NIL answer is no prediction; a NIL mention given an entity is a wrong
one), NIL precision / recall, and analysis pages per second in this process. Usage::

    python benchmarks/kg/quality.py [--pages 80] [--english 150]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cpu_per_page import JAVA, java_pages
from java_kb import build

from topicrawl.core.models import PageEntities
from topicrawl.demoweb import TOPICS, DemoWeb
from topicrawl.demoweb.kb import demo_kb_jsonl
from topicrawl.demoweb.text import ZH_PLACES
from topicrawl.demoweb.video.site import build_video_site
from topicrawl.kg.analyse import EntityAnalyzer, page_body
from topicrawl.kg.kbfile import parse_kb
from topicrawl.kg.link import Linker, LinkWeights
from topicrawl.kg.recognise import has_cjk
from topicrawl.parse.worker import parse_body

NIL = "NIL"
_TYPE_TITLE = re.compile(
    r"^(?:class|interface|enum|record|annotation interface|enum class) in (\S+)$"
)


@dataclass(slots=True)
class Counts:
    """Tallies of one labelled set."""

    mentions: int = 0
    recognised: int = 0
    predicted_spans: int = 0
    matched_spans: int = 0
    in_kb: int = 0
    candidate_hits: int = 0
    linked: int = 0  # mentions given a KB entity
    linked_right: int = 0
    gold_nil: int = 0
    said_nil: int = 0
    nil_right: int = 0
    pages: int = 0
    seconds: float = 0.0
    misses: list[str] = field(default_factory=list)

    def add(self, gold: str, predicted: str | None, candidates: Sequence[str]) -> None:
        """One labelled mention: its gold key (or NIL), the prediction (None: not found)."""
        self.mentions += 1
        if gold == NIL:
            self.gold_nil += 1
        else:
            self.in_kb += 1
            self.candidate_hits += gold in candidates[:5]
        if predicted is None:
            return
        self.recognised += 1
        if predicted == NIL:
            self.said_nil += 1
            self.nil_right += gold == NIL
        else:
            self.linked += 1
            self.linked_right += predicted == gold
            if predicted != gold and len(self.misses) < 8:
                self.misses.append(f"{gold} -> {predicted}")

    def report(self, label: str) -> str:
        def ratio(a: int, b: int) -> float:
            return a / b if b else 0.0

        precision = ratio(self.linked_right, self.linked)
        recall = ratio(self.linked_right, self.in_kb)
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        lines = [
            f"{label}: {self.mentions} labelled mentions ({self.gold_nil} gold NIL) on"
            f" {self.pages} pages",
            f"  recognition recall {ratio(self.recognised, self.mentions):.3f}",
        ]
        if self.predicted_spans:
            span_p = ratio(self.matched_spans, self.predicted_spans)
            span_r = ratio(self.recognised, self.mentions)
            span_f = 2 * span_p * span_r / (span_p + span_r) if span_p + span_r else 0.0
            lines.append(
                f"  span precision {span_p:.3f} ({self.predicted_spans} predicted), F1 {span_f:.3f}"
            )
        lines += [
            f"  candidate recall@5 {ratio(self.candidate_hits, self.in_kb):.3f}",
            f"  linking precision {precision:.3f} recall {recall:.3f} F1 {f1:.3f}",
            f"  NIL precision {ratio(self.nil_right, self.said_nil):.3f}"
            f" recall {ratio(self.nil_right, self.gold_nil):.3f}",
            f"  {ratio(self.pages, int(self.seconds * 1000)) * 1000:.0f} pages/s"
            " (recognition + linking + relations, one process)",
        ]
        if self.misses:
            lines.append("  some wrong links: " + "; ".join(self.misses))
        return "\n".join(lines)


def _held_out(key: str, every: int) -> bool:
    return zlib.crc32(key.encode("utf-8")) % every == 0


def _without(lines: list[dict[str, object]], every: int) -> tuple[str, set[str]]:
    """KB JSONL without the entities a hash holds out (and their relations); their keys."""
    held = {str(line["id"]) for line in lines if "id" in line and _held_out(str(line["id"]), every)}
    kept = [
        line
        for line in lines
        if str(line.get("id", "")) not in held
        and str(line.get("subject", "")) not in held
        and str(line.get("object", "")) not in held
    ]
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in kept), held


def _answer(found: PageEntities, surface: str) -> str | None:
    for mention in found.mentions:
        if mention.surface == surface:
            return NIL if mention.entity.startswith("found:") else mention.entity
    return None


# -- Java docs ------------------------------------------------------------------------------


def java_labels(url: str, html: str) -> dict[str, str]:
    """Anchor text -> gold type key, for the links to types in a class page's main content
    (a text linked to two types on one page is left out)."""
    tree = LexborHTMLParser(html)
    main = tree.css_first("main") or tree.body
    labels: dict[str, str] = {}
    clashes: set[str] = set()
    if main is None:
        return labels
    for anchor in main.css("a[title]"):
        found = _TYPE_TITLE.match(anchor.attributes.get("title") or "")
        text = anchor.text(strip=True).removeprefix("@")  # annotations: @Deprecated
        if found is None or not text[:1].isupper() or " " in text:
            continue  # not a type's name ("interfaces", "this class")
        package = found.group(1)
        # The anchor is the simple name (List) or, in places, the qualified one.
        gold = text if text.startswith(package + ".") else f"{package}.{text}"
        if labels.get(text, gold) != gold:
            clashes.add(text)
        labels[text] = gold

    return {text: gold for text, gold in labels.items() if text not in clashes}


def java_set(pages: int, wanted: int, weights: LinkWeights, *, whole_page: bool = False) -> Counts:
    lines = build(JAVA)
    kb_text, held = _without(lines, 10)
    kb = parse_kb(kb_text, fmt="jsonl")
    analyzer = EntityAnalyzer(kb, weights=weights)
    linker = Linker(kb, weights=weights)
    simple_names: dict[str, int] = {}
    for line in lines:
        if "id" in line and line.get("type") != "package":
            name = str(line["name"])
            simple_names[name] = simple_names.get(name, 0) + 1
    labelled: list[tuple[int, str, str]] = []  # (page index, surface, gold)
    parsed = []
    for index, (url, body) in enumerate(java_pages(lines, pages)):
        doc = parse_body(body, url, find_main=True)
        parsed.append(doc)
        for surface, gold in java_labels(url, body.decode("utf-8", "replace")).items():
            labelled.append((index, surface, NIL if gold in held else gold))
    rng = random.Random(20)
    ambiguous = [item for item in labelled if simple_names.get(item[1], 0) > 1]
    plain = [item for item in labelled if simple_names.get(item[1], 0) <= 1]
    take = min(len(ambiguous), wanted // 3)
    chosen = rng.sample(ambiguous, take) + rng.sample(plain, min(len(plain), wanted - take))
    results: dict[int, PageEntities] = {}
    counts = Counts()
    start = time.process_time()
    for index, doc in enumerate(parsed):
        main = None if whole_page else doc.page.main
        results[index] = analyzer(doc.page.title, doc.page.text, main=main)
    counts.seconds = time.process_time() - start
    counts.pages = len(parsed)
    for index, surface, gold in chosen:
        candidates = [c.key for c in linker.candidates(surface)]
        counts.add(gold, _answer(results[index], surface), candidates)
    return counts


# -- demo web ------------------------------------------------------------------------------


def _gold_spans(text: str, names: dict[str, str]) -> dict[tuple[int, int], str]:
    """Every occurrence of a vocabulary name (longest first, none overlapping)."""
    taken = bytearray(len(text))
    spans: dict[tuple[int, int], str] = {}
    for name in sorted(names, key=len, reverse=True):
        for found in re.finditer(re.escape(name), text):
            start, end = found.span()
            before = text[start - 1] if start > 0 else " "
            after = text[end] if end < len(text) else " "
            if not has_cjk(name) and (before.isalnum() or after.isalnum()):
                continue
            if taken.find(1, start, end) == -1:
                taken[start:end] = b"\x01" * (end - start)
                spans[start, end] = names[name]
    return spans


def with_decoys(lines: list[dict[str, object]]) -> list[dict[str, object]]:
    """The demo KB with a second entity for every name: the same name, of the next topic
    (its description that topic's words, ``part_of`` that topic), as likely a priori. The
    gold stays the name's own topic's entity; only the page's words can tell them apart."""
    topics = [t.id for t in TOPICS]
    words = {
        (t.id, lang): " ".join(t.vocabulary(lang).nouns) for t in TOPICS for lang in ("en", "zh")
    }
    topic_of = {
        str(line["subject"]): str(line["object"]).removeprefix("demo-topic:")
        for line in lines
        if line.get("relation") == "part_of"
    }
    decoys: list[dict[str, object]] = []
    for line in lines:
        key = str(line.get("id", ""))
        if key not in topic_of:
            continue
        other = topics[(topics.index(topic_of[key]) + 1) % len(topics)]
        decoy = f"{key}~{other}"
        lang = str(line.get("lang") or "en")
        decoys.append({**line, "id": decoy, "description": words[other, lang]})
        decoys.append({"subject": decoy, "relation": "part_of", "object": f"demo-topic:{other}"})
    entities = [line for line in lines if "id" in line]
    relations = [line for line in lines if "id" not in line]
    return (
        entities
        + [d for d in decoys if "id" in d]
        + relations
        + [d for d in decoys if "id" not in d]
    )


def demo_sets(seed: int, weights: LinkWeights, *, decoys: bool = False) -> dict[str, Counts]:
    lines = [json.loads(line) for line in demo_kb_jsonl().splitlines()]
    kb_text, held = _without(with_decoys(lines) if decoys else lines, 5)
    kb = parse_kb(kb_text, fmt="jsonl")
    analyzer = EntityAnalyzer(kb, weights=weights)
    linker = Linker(kb, weights=weights)
    names: dict[str, str] = {}
    for line in lines:
        if "id" in line and line.get("type") != "topic":
            names[str(line["name"])] = str(line["id"])
    web = DemoWeb.generate(seed=seed, hosts=4, pages_per_host=25, crawl_delay=0.0)
    analyzer("", "先载入结巴的词典 and the automaton")  # not timed: loading, once a process
    sets = {"zh": Counts(), "en": Counts()}
    for page in web.pages:
        if not page.is_document or page.lang not in sets:
            continue
        counts = sets[page.lang]
        body = page_body("", page.text)
        gold = _gold_spans(body, names)
        start = time.process_time()
        found = analyzer("", page.text)
        counts.seconds += time.process_time() - start
        counts.pages += 1
        predicted = {(m.start, m.end): m for m in found.mentions}
        counts.predicted_spans += len(predicted)
        for (begin, end), key in gold.items():
            mention = predicted.get((begin, end))
            answer = None
            if mention is not None:
                counts.matched_spans += 1
                answer = NIL if mention.entity.startswith("found:") else mention.entity
            candidates = [c.key for c in linker.candidates(body[begin:end])]
            counts.add(NIL if key in held else key, answer, candidates)
    return sets


_SHAPES = (0.0, 0.05, 0.1, 0.12, 0.14, 0.16, 0.18, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6)


def found_names(seed: int, weights: LinkWeights) -> str:
    """How often a Chinese name the recogniser finds and the KB lacks is a name.

    With the whole demo KB loaded, every vocabulary name links to it; what the demo web's
    Chinese pages then give found (NIL) entities is jieba's proper-noun tags (nr, ns, nt, nz)
    and the unknown-word rules. The generator's own lists say which are names: the cities its
    sentences name (``ZH_PLACES``), its hosts' names and the vocabularies' names; any other
    found entity is a word taken for a name. Reported: precision over found mentions and over
    distinct names, per type, and the recall of the cities (their occurrences found whole),
    with every name jieba's tags give (no name-shape filter). Then the name-shape filter
    (:meth:`~topicrawl.kg.recognise._ChineseTagger.name_shape`): its least shape is chosen on
    the even pages (best F1 of found names, recall counted against the names found without
    the filter) and reported on the odd ones.
    """
    kb = parse_kb(demo_kb_jsonl(), fmt="jsonl")
    analyzer = EntityAnalyzer(kb, weights=weights, name_shape=0.0, person_margin=None)
    tagger = analyzer._ready()[0]._tagger_ready()
    web = DemoWeb.generate(seed=seed, hosts=4, pages_per_host=25, crawl_delay=0.0)
    names = set(ZH_PLACES) | {h.name for h in web.hosts}
    names |= {n for t in TOPICS for n in (*t.en.entities, *t.zh.entities)}
    found: dict[tuple[str, str], int] = {}
    # per half (even, odd pages): (shape, is a name) of every found Chinese mention
    halves: tuple[list[tuple[float, bool]], ...] = ([], [])
    places = places_found = 0
    pages = [p for p in web.pages if p.is_document and p.lang == "zh"]
    for number, page in enumerate(pages):
        mentions = analyzer("", page.text).mentions
        spans = {(m.start, m.end) for m in mentions if m.entity.startswith("found:")}
        for mention in mentions:
            if mention.entity.startswith("found:") and has_cjk(mention.surface):
                key = (mention.surface, mention.type)
                found[key] = found.get(key, 0) + 1
                shape = tagger.name_shape(mention.surface, mention.type)
                halves[number % 2].append((shape, mention.surface in names))
        body = page_body("", page.text)
        for place in ZH_PLACES:
            for hit in re.finditer(re.escape(place), body):
                places += 1
                places_found += (hit.start(), hit.end()) in spans
    lines = ["Demo web, Chinese pages: names found that the KB lacks (whole KB loaded)"]
    right = {key: n for key, n in found.items() if key[0] in names}
    total, good = sum(found.values()), sum(right.values())
    lines.append(
        f"  found mentions {total}, names {good}: precision {good / max(total, 1):.3f};"
        f" distinct {len(found)}, names {len(right)}:"
        f" precision {len(right) / max(len(found), 1):.3f}"
    )
    for kind in sorted({t for _, t in found}):
        of_kind = {k: n for k, n in found.items() if k[1] == kind}
        named = sum(n for k, n in of_kind.items() if k in right)
        listed = sorted(of_kind.items(), key=lambda item: -item[1])
        lines.append(
            f"  {kind}: {named}/{sum(of_kind.values())} mentions are names"
            f" ({', '.join(f'{surface} {n}' for (surface, _), n in listed)})"
        )
    lines.append(f"  cities found whole: {places_found}/{places}")
    lines.append("  name-shape filter, found mentions (precision / recall / F1):")
    chosen = max(_SHAPES, key=lambda least: (_shape_scores(halves[0], least)[2], -least))
    for least in sorted({0.0, chosen}):
        for half, label in ((0, "even pages (choose)"), (1, "odd pages (report)")):
            precision, recall, f1 = _shape_scores(halves[half], least)
            lines.append(
                f"    least shape {least:.2f}, {label}: {precision:.3f} / {recall:.3f} / {f1:.3f}"
            )
    lines.append(f"  chosen on the even pages: {chosen:.2f}")
    return "\n".join(lines)


_MARGINS = (None, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0)


def person_names(seed: int, weights: LinkWeights) -> str:
    """Chinese persons' names from jieba's tags, with and without the part-of-speech margin
    (:func:`~topicrawl.kg.recognise.person_margin`).

    Two kinds of labelled Chinese pages, the demo KB loaded (it has no person): the demo
    web's (its generator writes no person's name: every found person there is a word taken
    for one) and the demo video site's (its directors and actors, surname + given name, are
    the gold names: every occurrence in a page's main content, whole). A found person is
    right when its span is a gold name's. Precision of the found persons, recall of the gold
    names' occurrences (found whole, as persons), F1; the least margin chosen on the even
    pages of both sites (best F1, then the lowest margin) and reported on the odd ones.
    """
    kb = parse_kb(demo_kb_jsonl(), fmt="jsonl")
    web = DemoWeb.generate(seed=seed, hosts=4, pages_per_host=25, crawl_delay=0.0)
    pages: list[tuple[str, str, tuple[int, int] | None]] = [
        ("", page.text, None) for page in web.pages if page.is_document and page.lang == "zh"
    ]
    demo_pages = len(pages)
    site = build_video_site(seed=seed)
    people = {e.name: e.name for e in site.entities() if e.lang == "zh"}
    for path in site.paths():
        status, content_type, body = site.render(path)
        if status == 200 and "html" in content_type:
            page = parse_body(body, site.url(path), find_main=True).page
            if has_cjk(page.text):
                pages.append((page.title, page.text, page.main))
    gold = [_gold_spans(page_body(*page), people) for page in pages]
    lines = [
        f"Chinese persons' names: {demo_pages} demo web pages (no names), {len(pages) - demo_pages}"
        f" video site pages ({sum(map(len, gold[demo_pages:]))} occurrences of"
        f" {len(people)} names); precision / recall / F1 of found persons"
    ]
    scores: dict[float | None, list[tuple[float, float, float]]] = {}
    wrong: dict[float | None, dict[str, int]] = {}
    for least in _MARGINS:
        analyzer = EntityAnalyzer(kb, weights=weights, person_margin=least)
        right, found, named = [0, 0], [0, 0], [0, 0]
        wrong[least] = {}
        for number, (title, text, main) in enumerate(pages):
            half = (number if number < demo_pages else number - demo_pages) % 2
            named[half] += len(gold[number])
            for mention in analyzer(title, text, main=main).mentions:
                if mention.type != "person" or not mention.entity.startswith("found:"):
                    continue
                found[half] += 1
                if (mention.start, mention.end) in gold[number]:
                    right[half] += 1
                else:
                    wrong[least][mention.surface] = wrong[least].get(mention.surface, 0) + 1
        scores[least] = []
        for half in (0, 1):
            precision = right[half] / max(found[half], 1)
            recall = right[half] / max(named[half], 1)
            f1 = 2 * precision * recall / max(precision + recall, 1e-9)
            scores[least].append((precision, recall, f1))
    chosen = max(_MARGINS, key=lambda least: (scores[least][0][2], -(least or -1.0)))
    for least in _MARGINS:
        label = "none" if least is None else f"{least:.1f}"
        even, odd = scores[least]
        top = sorted(wrong[least].items(), key=lambda item: -item[1])[:6]
        lines.append(
            f"  least margin {label:>4}: even (choose) {even[0]:.3f} / {even[1]:.3f} /"
            f" {even[2]:.3f}; odd (report) {odd[0]:.3f} / {odd[1]:.3f} / {odd[2]:.3f};"
            f" wrong: {', '.join(f'{w} {n}' for w, n in top)}"
        )
    lines.append(f"  chosen on the even pages: {chosen}")
    return "\n".join(lines)


def _shape_scores(found: list[tuple[float, bool]], least: float) -> tuple[float, float, float]:
    """Precision, recall (of the names found without a filter) and F1 of the found mentions
    whose name shape is at least ``least``."""
    kept = [named for shape, named in found if shape >= least]
    right = sum(kept)
    precision = right / max(len(kept), 1)
    recall = right / max(sum(named for _, named in found), 1)
    return precision, recall, 2 * precision * recall / max(precision + recall, 1e-9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=80, help="Java class pages read")
    parser.add_argument("--english", type=int, default=150, help="Java mentions drawn")
    parser.add_argument("--seed", type=int, default=11, help="the demo web's seed")
    parser.add_argument(
        "--nil-threshold", type=float, default=LinkWeights().nil_threshold, help="the linker's"
    )
    parser.add_argument(
        "--lone-needs-page",
        action=argparse.BooleanOptionalAction,
        default=LinkWeights().lone_needs_page,
        help="a lone candidate is NIL when its profile shares no word with the page",
    )
    parser.add_argument(
        "--whole-page",
        action="store_true",
        help="Java pages read whole, not their main content only (the code before session 20)",
    )
    parser.add_argument("--persons-only", action="store_true", help="stop after the persons")
    args = parser.parse_args()
    weights = LinkWeights(nil_threshold=args.nil_threshold, lone_needs_page=args.lone_needs_page)
    demo = demo_sets(args.seed, weights)
    print(demo["zh"].report("Demo web, Chinese pages"))
    print(demo["en"].report("Demo web, English pages"))
    ambiguous = demo_sets(args.seed, weights, decoys=True)
    print(ambiguous["zh"].report("Demo web, Chinese pages, every name shared with a decoy"))
    print(ambiguous["en"].report("Demo web, English pages, every name shared with a decoy"))
    print(found_names(args.seed, weights))
    print(person_names(args.seed, weights))
    if args.persons_only:
        return
    print(
        java_set(args.pages, args.english, weights, whole_page=args.whole_page).report(
            "Java API docs, links to types"
        )
    )


if __name__ == "__main__":
    main()
