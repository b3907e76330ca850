"""The online link learner: SGD updates checked by hand, the blend weight, standardisation,
its state across a resume, and the focused strategy that uses it."""

from __future__ import annotations

import json
import math

import pytest

from topicrawl.core.models import Link, Page, Request
from topicrawl.focus import FocusedStrategy, LearnedState, make_strategy
from topicrawl.focus.learner import (
    LearnerSettings,
    LearnerState,
    LinkLearner,
    blend,
    blend_weight,
    lift_blend,
    link_tokens,
)
from topicrawl.focus.promotion import SeedPromotion


def _link(path: str, *, text: str = "", score: float = 0.3, **reasons: float) -> Request:
    return Request(url=f"http://h{path}", score=score, depth=1, anchor=text, reasons=reasons)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def test_blend_weight_grows_with_evidence_is_capped_and_waits_for_both_verdicts() -> None:
    assert blend_weight(50, evidence=100.0, max_weight=0.5, both=False) == 0.0
    assert blend_weight(0, evidence=100.0, max_weight=0.5, both=True) == 0.0
    assert blend_weight(50, evidence=100.0, max_weight=0.5, both=True) == pytest.approx(1 / 3)
    assert blend_weight(100, evidence=100.0, max_weight=0.5, both=True) == 0.5
    assert blend_weight(900, evidence=100.0, max_weight=0.5, both=True) == 0.5
    assert blend_weight(900, evidence=100.0, max_weight=1.0, both=True) == pytest.approx(0.9)
    assert blend(0.2, 0.8, 0.25) == pytest.approx(0.75 * 0.2 + 0.25 * 0.8)


def test_link_tokens_name_directory_file_and_anchor_words() -> None:
    tokens = link_tokens("http://h/api/java/net/HttpClient.html", "Http Client")
    assert tokens == ("d:api", "d:java", "d:net", "u:http", "u:client", "a:http", "a:client")


def test_two_sgd_steps_match_the_hand_computed_log_loss_updates() -> None:
    """Constant step eta = 0.1, alpha = 0.01, one example a batch. The numeric features are
    the same for both links, so standardised they are 0; only the words differ.

    Step 1 (relevant, words d:good u:x): p = sigmoid(0) = 0.5, each word's weight becomes
    eta * (1 - p) = 0.05; the intercept (scikit-learn damps it by 0.01 for sparse input)
    0.1 * 0.5 * 0.01 = 0.0005.
    Step 2 (not relevant, words d:bad u:y): p = sigmoid(0.0005); the L2 step first shrinks
    every weight by (1 - eta * alpha) = 0.999, then d:bad, u:y get -eta * p.
    """
    learner = LinkLearner(LearnerSettings(every=1, eta0=0.1, alpha=0.01, explore=0.0))
    good = _link("/good/x.html", anchor=0.3)
    bad = _link("/bad/y.html", anchor=0.3)
    assert learner.observe(good, relevant=True)
    first = dict(learner.strongest())
    assert first == {"d:good": pytest.approx(0.05), "u:x": pytest.approx(0.05)}
    assert learner.state().intercept == pytest.approx(0.0005)
    learner.observe(bad, relevant=False)
    p = _sigmoid(0.0005)
    learned = dict(learner.strongest())
    assert learned["d:good"] == pytest.approx(0.05 * 0.999)
    assert learned["d:bad"] == pytest.approx(-0.1 * p)
    assert learner.state().intercept == pytest.approx(0.0005 - 0.1 * p * 0.01)
    # The fast scoring path is the model's own decision function.
    chances = learner.probabilities([good, bad])
    assert chances == pytest.approx([_sigmoid(x) for x in learner.decision([good, bad])])
    assert chances[0] > 0.5 > chances[1]


def test_numeric_features_are_standardised_with_the_batches_mean_and_variance() -> None:
    learner = LinkLearner(LearnerSettings(every=4, explore=0.0))
    priors = [0.2, 0.4, 0.6, 0.8]
    for i, prior in enumerate(priors):
        learner.observe(_link(f"/p{i}.html", score=prior), relevant=prior > 0.5)
    state = learner.state()
    assert state.scaler_seen == 4
    assert state.scaler_mean[0] == pytest.approx(0.5)  # prior
    assert state.scaler_var[0] == pytest.approx(0.05)  # population variance
    assert state.scaler_mean[-1] == pytest.approx(1.0)  # depth


def test_on_a_separable_set_the_deciding_feature_gets_the_largest_positive_weight() -> None:
    """Relevant pages came through links with a high anchor score in /good/; the others
    through low ones in /bad/; the inherited score says nothing (the same everywhere)."""
    learner = LinkLearner(LearnerSettings(every=20, explore=0.0))
    for round_ in range(5):
        for i in range(10):
            learner.observe(
                _link(f"/good/g{round_}{i}.html", anchor=0.6, inherited=0.2),
                relevant=True,
            )
            learner.observe(
                _link(f"/bad/b{round_}{i}.html", anchor=0.1, inherited=0.2),
                relevant=False,
            )
    weights = dict(learner.strongest(count=50))
    assert weights["anchor"] > 0.0 > weights["d:bad"]
    assert weights["d:good"] > 0.0
    assert "inherited" not in weights  # constant, so standardised to 0: never moved
    assert learner.examples == 100
    assert learner.updates == 5
    assert learner.weight == 0.5  # 100 / (100 + 100)
    fresh_good = _link("/good/new.html", anchor=0.6)
    fresh_bad = _link("/bad/new.html", anchor=0.1)
    good, bad = learner.probabilities([fresh_good, fresh_bad])
    assert good > 0.5 > bad


def test_the_model_has_no_say_until_it_has_seen_both_verdicts() -> None:
    learner = LinkLearner(LearnerSettings(every=5, explore=0.0))
    for i in range(10):
        learner.observe(_link(f"/a{i}.html"), relevant=True)
    assert learner.examples == 10
    assert learner.weight == 0.0


def test_the_state_goes_through_json_and_learning_continues_from_it() -> None:
    settings = LearnerSettings(every=4, explore=0.0)
    batches = [
        [(_link(f"/good/{r}{i}.html", text="socket"), True) for i in range(2)]
        + [(_link(f"/bad/{r}{i}.html", text="tree"), False) for i in range(2)]
        for r in range(3)
    ]
    original = LinkLearner(settings)
    for request, relevant in batches[0] + batches[1]:
        original.observe(request, relevant=relevant)
    saved = json.loads(json.dumps(original.state().to_dict()))
    resumed = LinkLearner(settings)
    resumed.restore(LearnerState.from_dict(saved))
    probe = [_link("/good/z.html", text="socket"), _link("/bad/z.html")]
    assert resumed.probabilities(probe) == pytest.approx(original.probabilities(probe))
    assert resumed.weight == original.weight
    for request, relevant in batches[2]:
        original.observe(request, relevant=relevant)
        resumed.observe(request, relevant=relevant)
    assert resumed.probabilities(probe) == pytest.approx(original.probabilities(probe))
    assert resumed.examples == original.examples == 12


def test_explored_links_are_a_fixed_seeded_share() -> None:
    learner = LinkLearner(LearnerSettings(explore=0.1, seed=3))
    urls = [f"http://h/{i}.html" for i in range(5000)]
    chosen = [u for u in urls if learner.explores(u)]
    assert 400 < len(chosen) < 600
    assert chosen == [
        u for u in urls if LinkLearner(LearnerSettings(explore=0.1, seed=3)).explores(u)
    ]
    assert chosen != [
        u for u in urls if LinkLearner(LearnerSettings(explore=0.1, seed=4)).explores(u)
    ]


def test_seed_promotion_keeps_the_best_relevant_hubs() -> None:
    promotion = SeedPromotion(capacity=2, min_hub=0.5)
    assert not promotion.consider("a", relevant=False, hub=1.0, importance=0.9)
    assert not promotion.consider("b", relevant=True, hub=0.4, importance=0.9)
    assert promotion.consider("c", relevant=True, hub=0.6, importance=0.5)
    assert promotion.consider("d", relevant=True, hub=0.9, importance=0.7)
    assert promotion.consider("e", relevant=True, hub=0.9, importance=0.6)  # drops c
    assert not promotion.consider("f", relevant=True, hub=0.9, importance=0.1)
    assert promotion.promoted == (("d", 0.7), ("e", 0.6))


# -- the focused strategy with the learner


def _page(url: str, *, text: str, links: list[tuple[str, str]], reasons: dict[str, float]) -> Page:
    return Page(
        url=url,
        final_url=url,
        status=200,
        depth=1,
        fetched_at=0.0,
        content_type="text/html",
        title=text.split(maxsplit=1)[0],
        text=text,
        links=tuple(Link(url=u, anchor=a, block=i) for i, (u, a) in enumerate(links)),
        reasons=reasons,
    )


def _crawl(strategy: FocusedStrategy, pages: int) -> list[Request]:
    """Feed the strategy pages: /x/ pages are about sockets, /y/ pages are not; every page
    links to two new pages of each, whose anchors say nothing. Returns the last page's links
    as the strategy keeps them (queued or held back)."""
    queued: list[Request] = []
    links: list[tuple[str, str]] = []
    for i in range(pages):
        directory = "x" if i % 2 else "y"
        text = "socket network port socket" if directory == "x" else "tree garden flower leaf"
        request = next((r for r in queued if f"/{directory}/" in r.url), None)
        reasons = dict(request.reasons) if request else {"anchor": 0.1, "inherited": 0.1}
        url = request.url if request else f"http://h/{directory}/start{i}.html"
        if request:
            queued.remove(request)
        links = [(f"http://h/{d}/p{i}-{k}.html", "more") for d in ("x", "y") for k in range(2)]
        page = _page(url, text=f"{text} page {i}", links=links, reasons=reasons)
        queued.extend(strategy.on_page(page).requests)
        queued.extend(strategy.on_idle(100))
    kept = [strategy.waiting.get(u) for u, _ in links]
    return [r for r in kept if r is not None]


def test_the_strategy_stores_the_model_part_beside_the_prior_and_saves_the_learner() -> None:
    options = {
        "learner": True,
        "learner_every": 10,
        "learner_evidence": 20.0,
        "learner_explore": 0.0,
        "calibrate_after": 0,
        "adaptive": False,
        "evolve": False,
        "family_yield": False,
        "directory_prior": 0.0,
    }
    strategy = make_strategy("focused", topics=["socket, network"], **options)
    assert isinstance(strategy, FocusedStrategy)
    last = _crawl(strategy, 60)
    assert strategy.learner is not None
    assert strategy.learner.weight > 0.0
    assert len(last) == 4
    assert all({"prior", "model", "learned"} <= set(r.reasons) for r in last)
    x_links = [r for r in last if "/x/" in r.url]
    y_links = [r for r in last if "/y/" in r.url]
    # Same prior (the anchors and parent are the same), but the model learned /x/ leads
    # to relevant pages.
    assert x_links[0].reasons["prior"] == pytest.approx(y_links[0].reasons["prior"])
    assert x_links[0].reasons["model"] > y_links[0].reasons["model"]
    assert x_links[0].score > y_links[0].score
    state = LearnedState.from_json(strategy.learned_state().to_json())
    assert state.learner is not None
    assert state.learner.examples == strategy.learner.examples
    assert ("d:x", pytest.approx(dict(state.learner.strongest)["d:x"])) in state.learner.strongest
    resumed = make_strategy("focused", topics=["socket, network"], **options)
    assert isinstance(resumed, FocusedStrategy)
    resumed.restore(state)
    assert resumed.learner is not None
    assert resumed.learner.weight == strategy.learner.weight


def test_without_the_learner_the_priorities_are_the_prior() -> None:
    strategy = make_strategy(
        "focused",
        topics=["socket, network"],
        calibrate_after=0,
        adaptive=False,
        evolve=False,
        rescore_waiting=True,
    )
    assert isinstance(strategy, FocusedStrategy)
    last = _crawl(strategy, 60)
    assert len(last) == 4
    assert all("model" not in r.reasons for r in last)
    assert strategy.learned_state().learner is None


def test_lift_blend_moves_the_prior_by_the_models_lift_over_the_base_rate() -> None:
    # P = 0.6 against a base rate of 0.3: lift 2, weight 0.5 -> prior * sqrt(2).
    assert lift_blend(0.2, 0.6, 0.5, base=0.3) == pytest.approx(0.2 * 2**0.5)
    # P = 0.15: lift 1/2 -> prior / sqrt(2).
    assert lift_blend(0.2, 0.15, 0.5, base=0.3) == pytest.approx(0.2 / 2**0.5)
    # The lift is clipped to [1/4, 4]: P = 0.9 against 0.1 counts as 4, not 9.
    assert lift_blend(0.2, 0.9, 1.0, base=0.1) == pytest.approx(0.8)
    assert lift_blend(0.2, 0.0, 1.0, base=0.1) == pytest.approx(0.05)
    # No weight or no base rate yet: the prior.
    assert lift_blend(0.2, 0.9, 0.0, base=0.3) == 0.2
    assert lift_blend(0.2, 0.9, 0.5, base=0.0) == 0.2


def test_with_the_lift_blend_a_links_score_is_its_prior_times_the_lift() -> None:
    options = {
        "learner": True,
        "learner_lift": True,
        "learner_every": 10,
        "learner_evidence": 20.0,
        "learner_explore": 0.0,
        "calibrate_after": 0,
        "adaptive": False,
        "evolve": False,
    }
    strategy = make_strategy("focused", topics=["socket, network"], **options)
    assert isinstance(strategy, FocusedStrategy)
    last = _crawl(strategy, 60)
    learner = strategy.learner
    assert learner is not None
    assert learner.weight > 0.0
    base = learner.base_rate
    assert 0.0 < base < 1.0
    for request in last:
        r = request.reasons
        assert request.score == pytest.approx(
            lift_blend(r["prior"], r["model"], r["learned"], base=base)
        )
    x_link = next(r for r in last if "/x/" in r.url)
    y_link = next(r for r in last if "/y/" in r.url)
    # The model learned that /x/ leads to relevant pages: above its prior, /y/ below.
    assert x_link.score > x_link.reasons["prior"] > 0.0
    assert y_link.score < y_link.reasons["prior"]
