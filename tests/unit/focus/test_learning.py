"""Link words, Snowball stems, the human judge, and the learned state's save and restore."""

from __future__ import annotations

import pytest

from tests.pages import fetched_page
from topicrawl.core.errors import ConfigError
from topicrawl.core.models import Link
from topicrawl.focus import (
    FocusedStrategy,
    HumanJudge,
    LearnedState,
    ProfileJudge,
    link_words,
    make_strategy,
    split_identifiers,
    url_words,
)
from topicrawl.focus.links import relative_to_best
from topicrawl.focus.stemming import SnowballTokenizer, make_tokenizer


def test_identifiers_split_at_case_changes() -> None:
    assert split_identifiers("ConcurrentHashMap") == "Concurrent Hash Map"
    assert split_identifiers("HTTPServer utf8Decoder") == "HTTP Server utf8 Decoder"
    assert split_identifiers("plain words") == "plain words"


def test_url_words_drop_the_suffix_and_split_paths_and_identifiers() -> None:
    url = "http://h:8080/java.base/java/util/concurrent/ReentrantLock.html?x=1#top"
    assert url_words(url) == "java base java util concurrent Reentrant Lock"
    assert url_words("http://h/library/concurrent.futures.html") == "library concurrent futures"
    assert url_words("http://h/") == ""
    assert link_words(Link("http://h/a/FileSystem.html", "FileSystem")) == (
        "File System a File System"
    )


def test_relative_to_best_is_capped_and_safe_before_any_score() -> None:
    assert relative_to_best(0.2, 0.4) == pytest.approx(0.5)
    assert relative_to_best(0.5, 0.4) == 1.0
    assert relative_to_best(0.3, 0.0) == 0.0


def test_snowball_stems_meet_where_plural_folding_does_not() -> None:
    snowball = SnowballTokenizer()
    assert snowball.tokens("concurrency concurrent") == ["concurr", "concurr"]
    assert snowball.tokens("compression compressed") == ["compress", "compress"]
    light = make_tokenizer("light", user_words=(), stem=True)
    assert light.tokens("concurrency concurrent") == ["concurrency", "concurrent"]
    # User words and Chinese words are kept as they are.
    kept = SnowballTokenizer(user_words=["threading"])
    assert kept.tokens("threading 机器学习") == ["threading", "机器", "学习"]
    with pytest.raises(ConfigError, match="stemmer"):
        make_strategy("focused", topics=["x"], stemmer="porter")


def test_human_judge_uses_labels_and_falls_back_for_the_rest() -> None:
    strategy = make_strategy("focused", topics=["crawler"])
    assert isinstance(strategy, FocusedStrategy)
    fallback = ProfileJudge(scorer=strategy.scorer)
    judge = HumanJudge({"http://a/yes": True, "http://a/no": False}, fallback=fallback)
    # The label wins over the page's text, both ways.
    assert judge.is_relevant(fetched_page("http://a/yes", "cooking pasta"))
    assert not judge.is_relevant(fetched_page("http://a/no", "crawler crawler"))
    assert judge.is_relevant(fetched_page("http://a/other", "crawler crawler"))
    assert (judge.asked, judge.answered) == (3, 2)
    assert not HumanJudge({}).is_relevant(fetched_page("http://a/other", "crawler"))


def _learned(**options: object) -> FocusedStrategy:
    strategy = make_strategy(
        "focused", topics=["crawler, spider"], evolve=True, update_every=2, **options
    )
    assert isinstance(strategy, FocusedStrategy)
    for i, text in enumerate(["cooking pasta sauce", "football league", "pasta recipe"]):
        strategy.on_page(fetched_page(f"http://n/{i}", text))
    for i in range(4):
        strategy.on_page(fetched_page(f"http://a/{i}", f"crawler spider frontier queue page{i}"))
    return strategy


def test_learned_state_round_trips_through_json_and_restores() -> None:
    strategy = _learned()
    state = strategy.learned_state()
    assert len(state.topics[0].snapshots) > 1  # the topic vector moved
    assert LearnedState.from_json(state.to_json()) == state

    resumed = make_strategy("focused", topics=["crawler, spider"])
    assert isinstance(resumed, FocusedStrategy)
    resumed.restore(LearnedState.from_json(state.to_json()))
    assert dict(resumed.topics[0].terms()) == pytest.approx(dict(strategy.topics[0].terms()))
    assert resumed.topics[0].history == strategy.topics[0].history
    assert resumed.threshold == strategy.threshold
    assert resumed.learned_state() == state


def test_state_of_other_topics_is_refused_and_garbage_is_a_config_error() -> None:
    state = _learned().learned_state()
    other = make_strategy("focused", topics=["cooking"])
    assert isinstance(other, FocusedStrategy)
    with pytest.raises(ConfigError, match="topics"):
        other.restore(state)
    for bad in ("", "[]", '{"pages": 1}', '{"pages": "x", "threshold": 0.1}'):
        with pytest.raises(ConfigError):
            LearnedState.from_json(bad)
    nan = state.to_json().replace(f'"threshold": {state.threshold}', '"threshold": NaN', 1)
    with pytest.raises(ConfigError):
        LearnedState.from_json(nan)


def test_threshold_history_records_each_move() -> None:
    strategy = make_strategy(
        "focused", topics=["crawler"], judge_every=1, sample_size=1, evolve=False
    )
    assert isinstance(strategy, FocusedStrategy)
    for i in range(4):
        strategy.on_page(fetched_page(f"http://a/{i}", "crawler"))
    history = strategy.learned_state().thresholds
    assert history[0] == (0, 0.1)
    # Precision stays 1.0 (stable, high): each measurement after the first steps down 0.01.
    assert [round(v, 2) for _, v in history] == [0.1, 0.09, 0.08, 0.07]
    assert [p for p, _ in history] == [0, 2, 3, 4]
