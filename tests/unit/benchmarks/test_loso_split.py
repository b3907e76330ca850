"""The focus benchmark's leave-one-site-out selection, on hand-made scores."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks" / "focus"))

from selection import feature_verdict, geomean, in_sample, leave_one_site_out

SITE_OF = {"a1": "A", "a2": "A", "b1": "B", "c1": "C"}

# "fitted" is best on site A only; "plain" is better on B and C.
SCORES = {
    "plain": {"a1": 2.0, "a2": 2.0, "b1": 1.5, "c1": 1.2},
    "fitted": {"a1": 1.0, "a2": 1.0, "b1": 3.0, "c1": 2.0},
}


def test_each_site_is_scored_with_the_setting_chosen_on_the_others() -> None:
    choices = {c.site: c for c in leave_one_site_out(SCORES, SITE_OF, ["plain", "fitted"])}

    # Without A: plain (B, C: gm(1.5, 1.2)) beats fitted (gm(3, 2)); reported on A: 2.0.
    assert choices["A"].setting == "plain"
    assert choices["A"].train == pytest.approx(math.sqrt(1.5 * 1.2))
    assert choices["A"].held_out == pytest.approx(2.0)
    # Without B: plain gm(2, 2, 1.2) = 1.687 against fitted gm(1, 1, 2) = 1.26: fitted wins
    # and scores 3.0 on B, although plain would have scored 1.5 there.
    assert choices["B"].setting == "fitted"
    assert choices["B"].train == pytest.approx(2 ** (1 / 3))
    assert choices["B"].held_out == pytest.approx(3.0)
    # Without C: plain gm(2, 2, 1.5) = 1.817 against fitted gm(1, 1, 3) = 1.442.
    assert choices["C"].setting == "fitted"
    assert choices["C"].held_out == pytest.approx(2.0)


def test_in_sample_choice_sees_every_site() -> None:
    # plain: gm(2, 2, 1.5, 1.2) = 1.627; fitted: gm(1, 1, 3, 2) = 1.565.
    assert in_sample(SCORES, SITE_OF, ["plain", "fitted"]) == "fitted"


def test_topics_missing_a_score_are_left_out_and_ties_go_to_the_first_setting() -> None:
    scores = {"x": {"a1": 1.0, "b1": 2.0, "c1": 5.0}, "y": {"a1": 1.0, "b1": 2.0}}
    choices = leave_one_site_out(scores, SITE_OF, ["y", "x"])
    assert [c.site for c in choices] == ["A", "B"]
    assert all(c.setting == "y" for c in choices)


def test_one_site_is_not_enough() -> None:
    with pytest.raises(ValueError, match="two sites"):
        leave_one_site_out({"x": {"a1": 1.0}}, {"a1": "A"}, ["x"])


def test_a_feature_that_helps_only_where_it_was_fitted_does_not_survive() -> None:
    verdict = feature_verdict(SCORES, SITE_OF, "fitted", "plain")

    assert verdict.in_sample == pytest.approx((geomean([1, 1, 3, 2]), geomean([2, 2, 1.5, 1.2])))
    assert verdict.in_sample[0] < verdict.in_sample[1]  # helps in-sample ...
    assert verdict.sites_helped == ("A",)
    # ... but left out: A gets plain (2, 2), B and C get fitted (3, 2).
    assert verdict.held_out[0] == pytest.approx(geomean([2, 2, 3, 2]))
    assert verdict.held_out[1] == pytest.approx(geomean([2, 2, 1.5, 1.2]))
    assert not verdict.survives
