"""AHP weights, consistency checks and post/topic heat, against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from topicrawl.core.errors import ConfigError
from topicrawl.topics import (
    DEFAULT_HEAT_JUDGMENT,
    RANDOM_INDEX,
    HeatWeights,
    InconsistentJudgmentError,
    InvalidJudgmentMatrixError,
    PostEngagement,
    WeightMethod,
    ahp_weights,
    consistency_ratio,
    default_heat_weights,
    judgment_matrix_from_upper,
    post_heat,
    topic_heat,
    validate_judgment_matrix,
)

# Wikipedia, "Analytic hierarchy process - leader example": the board's criteria judgments.
# Order: Experience, Education, Charisma, Age. Published priorities .547, .127, .270, .056,
# consistency ratio 0.044.
LEADER_CRITERIA = [
    [1, 4, 3, 7],
    [1 / 4, 1, 1 / 3, 3],
    [1 / 3, 3, 1, 5],
    [1 / 7, 1 / 3, 1 / 5, 1],
]
LEADER_PUBLISHED = (0.547, 0.127, 0.270, 0.056)

SAATY_SCALE = [1 / 9, 1 / 7, 1 / 5, 1 / 3, 1 / 2, 1, 2, 3, 5, 7, 9]


def test_textbook_leader_example_matches_published_priorities() -> None:
    result = ahp_weights(LEADER_CRITERIA)
    assert result.weights == pytest.approx(LEADER_PUBLISHED, abs=0.0015)
    assert result.cr == pytest.approx(0.044, abs=0.0005)
    assert result.lambda_max == pytest.approx(4.118, abs=0.001)
    assert result.method is WeightMethod.EIGENVECTOR


def test_arithmetic_mean_method_approximates_the_textbook_weights() -> None:
    result = ahp_weights(LEADER_CRITERIA, method=WeightMethod.ARITHMETIC_MEAN)
    assert result.weights == pytest.approx(LEADER_PUBLISHED, abs=0.01)
    assert math.fsum(result.weights) == pytest.approx(1.0)
    assert result.cr < 0.1


def test_arithmetic_mean_by_hand() -> None:
    # Column sums 23/15, 9/2, 8; normalised rows averaged:
    #   w1 = (15/23 + 2/3 + 5/8) / 3, w2 = (5/23 + 2/9 + 1/4) / 3, w3 = (3/23 + 1/9 + 1/8) / 3
    # lambda = mean((A w)_i / w_i) = 3.00370, CI = 0.00185, CR = CI / 0.58 = 0.00319.
    result = ahp_weights(
        [[1, 3, 5], [1 / 3, 1, 2], [1 / 5, 1 / 2, 1]], method=WeightMethod.ARITHMETIC_MEAN
    )
    expected = (
        (15 / 23 + 2 / 3 + 5 / 8) / 3,
        (5 / 23 + 2 / 9 + 1 / 4) / 3,
        (3 / 23 + 1 / 9 + 1 / 8) / 3,
    )
    assert result.weights == pytest.approx(expected, abs=1e-12)
    assert result.lambda_max == pytest.approx(3.00370, abs=1e-5)
    assert result.cr == pytest.approx(0.00319, abs=1e-5)


@pytest.mark.parametrize("method", list(WeightMethod))
def test_consistent_matrix_gives_its_exact_weights(method: WeightMethod) -> None:
    # a_ij = w_i / w_j with w = (4/7, 2/7, 1/7): perfectly consistent, lambda = n, CR = 0.
    result = ahp_weights([[1, 2, 4], [1 / 2, 1, 2], [1 / 4, 1 / 2, 1]], method=method)
    assert result.weights == pytest.approx((4 / 7, 2 / 7, 1 / 7), abs=1e-12)
    assert result.lambda_max == pytest.approx(3.0, abs=1e-9)
    assert result.cr == pytest.approx(0.0, abs=1e-9)


def test_circular_judgments_are_rejected_naming_the_cr() -> None:
    # A beats B 5:1, B beats C 5:1, C beats A 5:1. The matrix is circulant, so (1, 1, 1) is
    # its principal eigenvector with lambda = 1 + 5 + 1/5 = 6.2:
    # CI = (6.2 - 3) / 2 = 1.6, CR = 1.6 / 0.58 = 2.759.
    circular = [[1, 5, 1 / 5], [1 / 5, 1, 5], [5, 1 / 5, 1]]
    with pytest.raises(InconsistentJudgmentError, match=r"CR = 2\.759") as caught:
        ahp_weights(circular)
    assert isinstance(caught.value, ConfigError)
    assert caught.value.cr == pytest.approx(1.6 / 0.58)
    assert caught.value.limit == 0.1


def test_best_fitting_but_inconsistent_heat_matrix_is_rejected() -> None:
    # comments:reposts 7, comments:likes 3, reposts:likes 2 fits 0.70/0.16/0.14 closely but
    # contradicts itself (7 * 2 = 14 is far from 3): CR 0.23.
    with pytest.raises(InconsistentJudgmentError, match=r"CR = 0\.23"):
        HeatWeights.from_judgment(judgment_matrix_from_upper(3, [7, 3, 2]))


def test_cr_limit_is_configurable() -> None:
    result = ahp_weights(judgment_matrix_from_upper(3, [7, 3, 2]), max_cr=0.3)
    assert result.cr == pytest.approx(0.232, abs=0.001)


def test_default_heat_judgment_gives_the_intended_weights() -> None:
    weights = default_heat_weights()
    assert weights.comments == pytest.approx(0.70, abs=0.011)
    assert weights.reposts == pytest.approx(0.16, abs=0.006)
    assert weights.likes == pytest.approx(0.14, abs=0.006)
    assert weights.comments + weights.reposts + weights.likes == pytest.approx(1.0)
    assert ahp_weights(DEFAULT_HEAT_JUDGMENT).cr < 0.02


def test_matrix_from_upper_triangle() -> None:
    assert np.allclose(judgment_matrix_from_upper(3, [4, 6, 1]), DEFAULT_HEAT_JUDGMENT)
    with pytest.raises(InvalidJudgmentMatrixError, match="needs 3"):
        judgment_matrix_from_upper(3, [4, 6])


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        ([[1, 2, 3], [0.5, 1, 2]], "square"),
        ([], "square"),
        ([[1, -2], [-0.5, 1]], "positive"),
        ([[1, 0], [0, 1]], "positive"),
        ([[1, float("nan")], [1, 1]], "positive"),
        ([[2, 1], [1, 1]], "diagonal"),
        ([[1, 3], [3, 1]], r"a\[0\]\[1\] = 3 but a\[1\]\[0\] = 3"),
        ([["x"]], "numbers"),
        ([[1, 2], [1]], "numbers"),
        (np.ones((16, 16)), "n <= 15"),
    ],
)
def test_malformed_matrices_get_clear_errors(matrix: object, message: str) -> None:
    with pytest.raises(InvalidJudgmentMatrixError, match=message):
        ahp_weights(matrix)  # type: ignore[arg-type]


def test_two_decimal_reciprocals_are_accepted_and_made_exact() -> None:
    a = validate_judgment_matrix([[1, 3, 0.14], [0.33, 1, 0.2], [7, 5, 1]])
    assert np.allclose(a * a.T, 1.0)
    assert a[0, 1] == pytest.approx(math.sqrt(3 / 0.33))


def test_orders_one_and_two_are_always_consistent() -> None:
    assert ahp_weights([[1]]).weights == (1.0,)
    two = ahp_weights([[1, 3], [1 / 3, 1]])
    assert two.weights == pytest.approx((0.75, 0.25))
    assert two.cr == 0.0
    assert consistency_ratio(2.0, 2) == 0.0


def test_random_index_table() -> None:
    assert sorted(RANDOM_INDEX) == list(range(1, 16))
    assert RANDOM_INDEX[3] == 0.58
    assert RANDOM_INDEX[4] == 0.90
    assert RANDOM_INDEX[9] == 1.45


@given(st.lists(st.sampled_from(SAATY_SCALE), min_size=3, max_size=3))
def test_any_saaty_matrix_gives_weights_or_a_consistency_error(upper: list[float]) -> None:
    matrix = judgment_matrix_from_upper(3, upper)
    unchecked = ahp_weights(matrix, max_cr=math.inf)
    if unchecked.cr > 0.1:
        with pytest.raises(InconsistentJudgmentError):
            ahp_weights(matrix)
        return
    result = ahp_weights(matrix)
    assert all(math.isfinite(w) and w > 0 for w in result.weights)
    assert math.fsum(result.weights) == pytest.approx(1.0)
    assert 0.0 <= result.cr <= 0.1


@given(st.lists(st.floats(min_value=0.01, max_value=100.0), min_size=2, max_size=15))
def test_weights_of_a_consistent_matrix_are_recovered(raw: list[float]) -> None:
    w = np.array(raw) / sum(raw)
    result = ahp_weights(np.outer(w, 1.0 / w))
    assert result.weights == pytest.approx(tuple(w), rel=1e-6, abs=1e-9)
    assert result.cr == pytest.approx(0.0, abs=1e-6)


def test_post_and_topic_heat_by_hand() -> None:
    weights = HeatWeights(reposts=0.2, likes=0.1, comments=0.7)
    busy = PostEngagement(reposts=10, likes=100, comments=5)
    quiet = PostEngagement(reposts=0, likes=0, comments=0)
    assert post_heat(busy, weights) == pytest.approx(0.2 * 10 + 0.1 * 100 + 0.7 * 5)  # 15.5
    assert topic_heat([busy, quiet], weights) == pytest.approx(7.75)
    assert topic_heat([], weights) == 0.0


def test_heat_weights_follow_the_judgment_order() -> None:
    # comments, reposts, likes: reposts matter most here.
    weights = HeatWeights.from_judgment(judgment_matrix_from_upper(3, [1 / 2, 2, 4]))
    assert weights.reposts > weights.comments > weights.likes
    with pytest.raises(InvalidJudgmentMatrixError, match="3x3"):
        HeatWeights.from_judgment([[1, 2], [0.5, 1]])


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_engagement_counts_must_be_real_counts(bad: float) -> None:
    with pytest.raises(ValueError, match="likes"):
        PostEngagement(reposts=1, likes=bad, comments=1)
