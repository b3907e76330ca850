"""The LDA filter on a hand-made corpus: film accounts in, cooking and football out."""

from __future__ import annotations

import pytest

from topicrawl.core.errors import ConfigError
from topicrawl.sources.lda import LdaFilter, LdaSettings

FILM_EN = (
    "the director cast the actor in a new film; the trailer and the premiere drew crowds. "
    "box office of the sequel, the screenplay and the cinema release; "
)
FILM_ZH = "导演执导的电影定档，演员主演的电视剧大结局，票房和预告片都很精彩。"
COOK_EN = "the chef roasted garlic and simmered the broth; a spicy sauce on the noodle soup. "
COOK_ZH = "厨师翻炒牛肉，火锅和饺子味道鲜美，红烧肉的酱油很香。"
BALL_EN = "the striker scored a late goal; the goalkeeper saved a penalty in the derby. "

CORPUS = {
    "film1": FILM_EN * 6 + BALL_EN,
    "film2": FILM_EN * 5 + COOK_EN,
    "film3": FILM_ZH * 6,
    "film4": FILM_ZH * 4 + COOK_ZH,
    "cook1": COOK_EN * 6,
    "cook2": COOK_ZH * 6,
    "cook3": COOK_EN * 4 + FILM_EN,  # mentions a film once: still a cooking account
    "ball1": BALL_EN * 6,
    "ball2": BALL_EN * 5 + COOK_EN,
}
DOMAIN = ("film", "director", "actor", "电影", "导演", "演员", "电视剧")
SETTINGS = LdaSettings(topics=8, threshold=0.4, seed=1)


def test_film_accounts_score_above_the_others() -> None:
    scores = LdaFilter(DOMAIN, settings=SETTINGS).score(CORPUS)
    films = [scores[k].score for k in CORPUS if k.startswith("film")]
    others = [scores[k].score for k in CORPUS if not k.startswith("film")]
    assert min(films) > max(others)
    kept = {k for k, s in scores.items() if s.kept}
    assert kept == {"film1", "film2", "film3", "film4"}
    assert all(0.0 <= s.score <= 1.0 for s in scores.values())
    assert len(scores["film1"].topics) == 5  # its top N = 5 topics
    assert scores["film1"].words  # the top words of its first topic


def test_accounts_to_keep_are_kept_whatever_their_score() -> None:
    scores = LdaFilter(DOMAIN, settings=SETTINGS).score(CORPUS, keep={"cook1"})
    assert scores["cook1"].kept
    assert scores["cook1"].score < SETTINGS.threshold


def test_a_domain_absent_from_the_posts_scores_nothing() -> None:
    flt = LdaFilter(["astronomy", "telescope"], settings=SETTINGS)
    scores = flt.score(CORPUS)
    assert flt.domain_hits == 0
    assert all(s.score == 0.0 and not s.kept for s in scores.values())


def test_empty_documents_and_bad_settings() -> None:
    scores = LdaFilter(DOMAIN).score({"a": "", "b": "   "})
    assert {k: s.score for k, s in scores.items()} == {"a": 0.0, "b": 0.0}
    with pytest.raises(ConfigError):
        LdaFilter([" "])
    with pytest.raises(ConfigError):
        LdaSettings(threshold=1.5)
    with pytest.raises(ConfigError):
        LdaSettings(top_words=0)


def test_an_account_with_no_posts_scores_nothing_among_others() -> None:
    scores = LdaFilter(DOMAIN, settings=SETTINGS).score({**CORPUS, "silent": ""}, keep={"silent"})
    assert scores["silent"].score == 0.0
    assert scores["silent"].kept
    assert scores["silent"].topics == ()
