from __future__ import annotations

import random

import pytest

from tests.pages import fetched_page
from topicrawl.core.errors import ConfigError
from topicrawl.core.models import Page
from topicrawl.focus import (
    Judge,
    ProfileJudge,
    ThresholdController,
    ThresholdMove,
    ThresholdSettings,
    TopicScorer,
    parse_topic,
    sample_precision,
)


def _controller(**settings: float) -> ThresholdController:
    defaults: dict[str, float] = {
        "initial": 0.2,
        "minimum": 0.05,
        "maximum": 0.5,
        "step": 0.02,
        "error": 0.05,
        "min_precision": 0.5,
    }
    defaults.update(settings)
    return ThresholdController(settings=ThresholdSettings(**defaults))  # type: ignore[arg-type]


def test_first_measurement_only_sets_the_baseline() -> None:
    controller = _controller()
    assert controller.observe(0.8) is ThresholdMove.HOLD
    assert controller.value == 0.2


def test_stable_precision_lowers_the_threshold_for_coverage() -> None:
    controller = _controller()
    moves = [controller.observe(p) for p in (0.80, 0.82, 0.79, 0.81)]
    assert moves == [ThresholdMove.HOLD, ThresholdMove.DOWN, ThresholdMove.DOWN, ThresholdMove.DOWN]
    assert controller.value == pytest.approx(0.2 - 3 * 0.02)
    assert controller.precisions == (0.80, 0.82, 0.79, 0.81)


def test_swinging_precision_raises_the_threshold() -> None:
    controller = _controller()
    moves = [controller.observe(p) for p in (0.8, 0.5, 0.9, 0.6)]
    assert moves[1:] == [ThresholdMove.UP] * 3
    assert controller.value == pytest.approx(0.2 + 3 * 0.02)


def test_steadily_poor_precision_raises_the_threshold() -> None:
    controller = _controller(min_precision=0.5)
    controller.observe(0.3)
    assert controller.observe(0.31) is ThresholdMove.UP


def test_threshold_stays_within_its_range() -> None:
    controller = _controller(initial=0.06, minimum=0.05)
    for _ in range(5):
        controller.observe(0.9)
    assert controller.value == pytest.approx(0.05)
    assert controller.observe(0.9) is ThresholdMove.HOLD
    with pytest.raises(ValueError, match="precision"):
        controller.observe(1.5)


def test_retune_keeps_the_same_share_of_pages_relevant() -> None:
    controller = _controller(maximum=0.9)
    scores = [0.9, 0.1, 0.4, 0.3, 0.2, 0.05, 0.6, 0.5, 0.7, 0.8]
    assert controller.retune(scores, keep_fraction=0.3) == pytest.approx(0.7)
    assert controller.retune(scores, keep_fraction=0.25) == pytest.approx(0.7)  # ceil(2.5) = 3
    assert controller.retune(scores, keep_fraction=0.2) == pytest.approx(0.8)
    assert controller.retune([], keep_fraction=0.5) == pytest.approx(0.8)
    assert controller.retune(scores, keep_fraction=1.0) == pytest.approx(0.05)


def test_calibrate_puts_the_threshold_where_it_agrees_with_the_judge() -> None:
    controller = _controller(minimum=0.01)
    judged = [(0.30, True), (0.06, False), (0.10, True), (0.08, False), (0.07, True)]
    # Sorted: 0.06 no, 0.07 yes, 0.08 no, 0.10 yes, 0.30 yes. A threshold between 0.06 and
    # 0.07 gets 4 of 5 right, between 0.08 and 0.10 also 4: the higher one wins.
    assert controller.calibrate(judged) == pytest.approx(0.09)
    # Perfectly separable: the midpoint of the gap.
    assert controller.calibrate([(0.02, False), (0.03, False), (0.05, True)]) == pytest.approx(0.04)


def test_calibrate_leaves_the_threshold_when_there_is_nothing_to_separate() -> None:
    controller = _controller()
    assert controller.calibrate([(0.01, True), (0.02, True)]) == 0.2
    assert controller.calibrate([(0.3, False)]) == 0.2
    assert controller.calibrate([]) == 0.2
    # Equal scores cannot be split: every page passes, 1 of 2 right, no better cut exists.
    assert controller.calibrate([(0.3, False), (0.3, True)]) == pytest.approx(0.3)


def test_calibrate_stays_within_the_range() -> None:
    controller = _controller(minimum=0.05)
    assert controller.calibrate([(0.01, False), (0.02, True)]) == pytest.approx(0.05)


def test_invalid_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        ThresholdSettings(initial=0.9, maximum=0.5)
    with pytest.raises(ConfigError):
        ThresholdSettings(step=0.0)
    with pytest.raises(ConfigError):
        ThresholdSettings(sample_size=0)


class _ByUrl:
    def __init__(self, good: set[str]) -> None:
        self.good = good
        self.asked: list[str] = []

    def is_relevant(self, page: Page) -> bool:
        self.asked.append(page.url)
        return page.url in self.good


def test_sample_precision_judges_a_seeded_random_sample() -> None:
    pages = [fetched_page(f"http://a/{i}") for i in range(20)]
    judge = _ByUrl({f"http://a/{i}" for i in range(10)})
    assert isinstance(judge, Judge)
    first = sample_precision(pages, judge, size=8, rng=random.Random(7))
    asked = list(judge.asked)
    judge.asked.clear()
    again = sample_precision(pages, judge, size=8, rng=random.Random(7))
    assert first == again
    assert judge.asked == asked
    assert len(set(asked)) == 8
    assert first == sum(url in judge.good for url in asked) / 8


def test_sample_precision_of_nothing_is_none() -> None:
    assert sample_precision([], _ByUrl(set()), size=5, rng=random.Random(0)) is None


def test_profile_judge_accepts_on_topic_pages_and_rejects_others() -> None:
    scorer = TopicScorer(topics=[parse_topic("web crawler, frontier | crawler politeness")])
    for text in ("cooking pasta", "football scores", "web crawler frontier"):
        scorer.page_vector(fetched_page("http://x/", text), learn=True)
    judge = ProfileJudge(scorer=scorer)
    on_topic = fetched_page("http://a/", "the frontier of a web crawler", title="Crawler design")
    off_topic = fetched_page("http://b/", "pasta with tomato and basil", title="Recipes")
    assert judge.is_relevant(on_topic)
    assert not judge.is_relevant(off_topic)
    assert judge.score(on_topic) > judge.score(off_topic)


def test_profile_judge_counts_the_coverage_of_a_bilingual_topic_per_script() -> None:
    scorer = TopicScorer(topics=[parse_topic("telescope, galaxy, 望远镜, 星系")])
    judge = ProfileJudge(scorer=scorer)
    english = fetched_page("http://a/", "a telescope sees a far galaxy")
    chinese = fetched_page("http://b/", "望远镜 看到 遥远 的 星系")
    # Each page has both keywords of its own language: coverage 1, not 2 of 4.
    for page in (english, chinese):
        assert judge._coverage(scorer.topics[0].keyword_ids, scorer.page_terms(page)) == 1.0
    half = fetched_page("http://c/", "a telescope on a hill")
    assert judge._coverage(scorer.topics[0].keyword_ids, scorer.page_terms(half)) == 0.5
