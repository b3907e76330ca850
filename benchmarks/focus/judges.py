"""How well the adaptive threshold's automatic judges agree with the demo web's ground truth.

For each language and each of the focus benchmark's demo topics (astronomy, cooking,
football, with the benchmark's keywords), a judge given that one topic judges every document
page of that language that has text; a page is truly relevant when its ``true_topic`` is the
topic. Precision, recall and accuracy are pooled over the three topics. The embedding judge's
threshold is chosen on another generated web (``--choose-seed``, English pages, best
accuracy) and the judges are measured on ``--seed``.

Usage: python benchmarks/focus/judges.py [--seed 7] [--choose-seed 8]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

from topics import DEMO_LANGS, DEMO_TOPIC_IDS

from topicrawl.core.models import Page
from topicrawl.demoweb import DemoWeb
from topicrawl.demoweb.model import Kind
from topicrawl.demoweb.render import render_document
from topicrawl.demoweb.text import TOPICS
from topicrawl.focus import EmbeddingJudge, ProfileJudge, TopicProfile, TopicScorer, parse_topic
from topicrawl.focus.embedding import load_bundled_model
from topicrawl.parse.html import parse_html

_DOCUMENTS = {Kind.HOME, Kind.SECTION, Kind.ARTICLE, Kind.UTILITY}


@dataclass(frozen=True, slots=True)
class Labelled:
    page: Page
    topic: str | None


@dataclass(frozen=True, slots=True)
class Agreement:
    tp: int
    fp: int
    fn: int
    tn: int

    def row(self) -> str:
        judged = self.tp + self.fp
        truly = self.tp + self.fn
        precision = self.tp / judged if judged else 0.0
        recall = self.tp / truly if truly else 0.0
        accuracy = (self.tp + self.tn) / (self.tp + self.fp + self.fn + self.tn)
        return f"{precision:.2f} | {recall:.2f} | {accuracy:.2f}"


def demo_pages(seed: int, lang: str) -> list[Labelled]:
    """The web's documents in ``lang`` as a crawl sees them: rendered, then parsed (menus,
    teasers and footers included)."""
    web = DemoWeb.generate(seed=seed).at_port(8000)
    pages = []
    for demo in web.pages:
        if demo.lang != lang or not demo.paragraphs or demo.kind not in _DOCUMENTS:
            continue
        url = web.url_of(demo)
        parsed = parse_html(render_document(web, demo).decode(demo.encoding), url=url)
        page = Page(
            url=url,
            final_url=url,
            status=200,
            depth=0,
            fetched_at=0.0,
            content_type="text/html",
            title=parsed.title,
            text=parsed.text,
            lang=parsed.lang,
        )
        pages.append(Labelled(page, demo.true_topic))
    return pages


def demo_topic(topic_id: str, lang: str) -> TopicProfile:
    """The focus benchmark's topic string (run.py ``demo_topics``)."""
    topic = next(t for t in TOPICS if t.id == topic_id)
    return parse_topic(", ".join([topic.name(lang), *topic.vocabulary(lang).nouns[:6]]))


def profile_scores(topic: TopicProfile, pages: Sequence[Labelled]) -> list[float]:
    # The judge sees the collection statistics of a crawl that has fetched these pages.
    scorer = TopicScorer(topics=[topic])
    for item in pages:
        scorer.page_vector(item.page, learn=True)
    judge = ProfileJudge(scorer=scorer)
    return [judge.score(item.page) for item in pages]


def agreement(decisions: Sequence[bool], truth: Sequence[bool]) -> Agreement:
    pairs = list(zip(decisions, truth, strict=True))
    tp = sum(1 for d, t in pairs if d and t)
    fp = sum(1 for d, t in pairs if d and not t)
    fn = sum(1 for d, t in pairs if not d and t)
    return Agreement(tp, fp, fn, len(pairs) - tp - fp - fn)


def pooled(parts: Sequence[Agreement]) -> Agreement:
    return Agreement(*(sum(getattr(p, f) for p in parts) for f in ("tp", "fp", "fn", "tn")))


@dataclass(frozen=True, slots=True)
class Judged:
    """One topic's judgements of one language's pages."""

    lang: str
    truth: list[bool]
    embedding: list[float]
    profile: list[float]
    english: list[bool]


def judge_web(
    seed: int,
    langs: Sequence[str],
    embedding: Callable[[TopicProfile, list[Labelled]], list[float]],
) -> list[Judged]:
    out = []
    for lang in langs:
        pages = demo_pages(seed, lang)
        english = [
            EmbeddingJudge(topics=[demo_topic("cooking", lang)]).reads(i.page) for i in pages
        ]
        for topic_id in DEMO_TOPIC_IDS:
            topic = demo_topic(topic_id, lang)
            out.append(
                Judged(
                    lang,
                    [item.topic == topic_id for item in pages],
                    embedding(topic, pages),
                    profile_scores(topic, pages),
                    english,
                )
            )
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--choose-seed", type=int, default=8)
    args = parser.parse_args(argv)
    process = psutil.Process()
    encodes: list[tuple[int, float]] = []
    rss_before = process.memory_info().rss
    started = time.perf_counter()
    model = load_bundled_model()
    loaded = time.perf_counter() - started
    rss_loaded = process.memory_info().rss

    def embedding_scores(topic: TopicProfile, pages: list[Labelled]) -> list[float]:
        judge = EmbeddingJudge(topics=[topic], model=model)
        judge.score(pages[0].page)  # embeds the topic
        started = time.perf_counter()
        scores = judge.scores([item.page for item in pages])
        encodes.append((len(pages), time.perf_counter() - started))
        return scores

    choose = judge_web(args.choose_seed, ["en"], embedding_scores)
    candidates = [round(0.05 * i, 2) for i in range(1, 13)]

    def accuracy(threshold: float) -> float:
        a = pooled([agreement([e >= threshold for e in j.embedding], j.truth) for j in choose])
        return (a.tp + a.tn) / (a.tp + a.fp + a.fn + a.tn)

    threshold = max(candidates, key=accuracy)
    print(f"threshold chosen on seed {args.choose_seed} (English): {threshold}")
    print("  accuracy by threshold: " + ", ".join(f"{c}: {accuracy(c):.3f}" for c in candidates))
    print(
        f"model loaded in {loaded:.1f} s; RSS {rss_before >> 20} MiB before, "
        f"{rss_loaded >> 20} MiB after loading, "
        f"{process.memory_info().rss >> 20} MiB after encoding"
    )
    pages, seconds = map(sum, zip(*encodes, strict=True))
    print(f"encode: {1000 * seconds / pages:.1f} ms a page in batches of 16 ({pages} pages)")
    one = demo_pages(args.choose_seed, "en")[:20]
    judge = EmbeddingJudge(topics=[demo_topic("astronomy", "en")], model=model)
    judge.score(one[0].page)
    started = time.perf_counter()
    for item in one[1:]:
        judge.score(item.page)
    each = (time.perf_counter() - started) / (len(one) - 1)
    print(f"encode: {1000 * each:.1f} ms a page one by one")

    judged = judge_web(args.seed, DEMO_LANGS, embedding_scores)
    default = EmbeddingJudge(topics=[demo_topic("cooking", "en")]).threshold
    rules: dict[str, Callable[[Judged, int], bool]] = {
        "profile (0.25)": lambda j, i: j.profile[i] >= 0.25,
        f"embedding ({threshold})": lambda j, i: j.embedding[i] >= threshold,
        f"embedding ({default}), profile for non-English": lambda j, i: (
            j.embedding[i] >= default if j.english[i] else j.profile[i] >= 0.25
        ),
    }
    print(f"\nseed {args.seed}: judge | lang | precision | recall | accuracy")
    for name, rule in rules.items():
        for lang in DEMO_LANGS:
            parts = [
                agreement([rule(j, i) for i in range(len(j.truth))], j.truth)
                for j in judged
                if j.lang == lang
            ]
            a = pooled(parts)
            print(f"{name} | {lang} | {a.row()}   ({a.tp + a.fn} of {a.tp + a.fp + a.fn + a.tn})")
    for j, topic_id in zip(judged, DEMO_TOPIC_IDS * len(DEMO_LANGS), strict=True):
        on = [x for x, y in zip(j.embedding, j.truth, strict=True) if y]
        off = [x for x, y in zip(j.embedding, j.truth, strict=True) if not y]
        print(
            f"  embedding cosines {j.lang} {topic_id}: on-topic mean {sum(on) / len(on):.2f}"
            f" min {min(on):.2f}, off-topic mean {sum(off) / len(off):.2f} max {max(off):.2f}"
        )
    for lang in DEMO_LANGS:
        pages = demo_pages(args.seed, lang)
        judge = EmbeddingJudge(topics=[demo_topic("cooking", lang)])
        undeclared = [judge.reads(dataclasses.replace(i.page, lang=None)) for i in pages]
        print(
            f"  {lang} pages read as English without their lang attribute: "
            f"{sum(undeclared)} of {len(pages)}"
        )


if __name__ == "__main__":
    main()
