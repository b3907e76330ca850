"""Brown's DES, the BP net, entropy weights and the combined heat forecast, by hand."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topicrawl.topics import (
    DEFAULT_ALPHA,
    VOLATILE_ALPHA,
    BpForecaster,
    DesForecaster,
    EntropyVariant,
    Forecaster,
    HeatForecaster,
    NaiveForecaster,
    brown_smoothing,
    choose_alpha,
    des_sse,
    entropy_weights,
    volatility,
    volatility_alpha,
)

SERIES = [10.0, 12.0, 14.0, 13.0]


def _h(p: list[float]) -> float:
    """Normalised entropy of proportions, written out for the hand computations."""
    return -sum(x * math.log(x) for x in p if x > 0) / math.log(len(p))


# --- Brown's DES ---------------------------------------------------------------------------


def test_des_by_hand() -> None:
    # alpha 0.5, S1_0 = S2_0 = 10:
    #   x=12: S1 = 11,     S2 = 10.5
    #   x=14: S1 = 12.5,   S2 = 11.5
    #   x=13: S1 = 12.75,  S2 = 12.125
    # a = 2*12.75 - 12.125 = 13.375, b = 0.5/0.5 * (12.75 - 12.125) = 0.625
    state = brown_smoothing(SERIES, 0.5)
    assert (state.s1, state.s2) == pytest.approx((12.75, 12.125))
    assert state.level == pytest.approx(13.375)
    assert state.trend == pytest.approx(0.625)
    assert state.forecast(1) == pytest.approx(14.0)
    assert state.forecast(2) == pytest.approx(14.625)
    assert DesForecaster(alpha=0.5).predict(SERIES, steps=2).value == pytest.approx(14.625)


def test_des_one_step_sse_by_hand() -> None:
    # Forecasts from the state before each period: 10 (x=12), 11.5 + 0.5 = 12 (x=14),
    # 13.5 + 1 = 14.5 (x=13): SSE = 4 + 4 + 2.25.
    assert des_sse(SERIES, 0.5) == pytest.approx(10.25)


def test_first_value_is_its_own_forecast() -> None:
    assert DesForecaster().predict([7.0]).value == 7.0


def test_alpha_must_be_inside_the_open_interval() -> None:
    for bad in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="alpha"):
            DesForecaster(alpha=bad)
    with pytest.raises(ValueError, match="alpha"):
        DesForecaster(alpha="best")  # type: ignore[arg-type]


def test_auto_alpha_minimises_sse_over_the_grid() -> None:
    line = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    noisy_flat = [10.0, 11.0, 9.0, 10.0, 11.0, 9.0, 10.0, 10.0, 11.0]
    assert choose_alpha(line) == 0.95  # a clean trend is tracked best by the fastest alpha
    assert choose_alpha(noisy_flat) == 0.05  # noise around a level is smoothed best slowly
    grid = (0.2, 0.5, 0.8)
    assert choose_alpha(SERIES, grid) == min(grid, key=lambda a: des_sse(SERIES, a))
    assert choose_alpha([1.0, 5.0]) == DEFAULT_ALPHA  # too short to judge
    auto = DesForecaster(alpha="auto").predict(line)
    assert auto.note == "alpha=0.95 (auto)"


def test_volatile_topics_get_the_larger_alpha() -> None:
    # mean |change| 10 over mean level 15: 0.67 > 0.25
    assert volatility([10.0, 20.0, 10.0, 20.0]) == pytest.approx(10 / 15)
    assert volatility_alpha([10.0, 20.0, 10.0, 20.0]) == VOLATILE_ALPHA
    assert volatility_alpha([100.0, 101.0, 100.0, 101.0]) == DEFAULT_ALPHA
    assert volatility([0.0, 0.0, 0.0]) == 0.0
    assert DesForecaster(alpha="volatility").alpha_for([10.0, 20.0, 10.0, 20.0]) == 0.6


@pytest.mark.parametrize("bad", [[], [1.0, float("nan")], [float("inf")], [1e16]])
def test_bad_histories_are_refused(bad: list[float]) -> None:
    with pytest.raises(ValueError, match=r"history|heat"):
        DesForecaster().predict(bad)


def test_naive_repeats_the_last_value() -> None:
    forecaster = NaiveForecaster()
    assert forecaster.predict(SERIES, steps=3).value == 13.0
    assert isinstance(forecaster, Forecaster)


# --- BP net --------------------------------------------------------------------------------


def test_bp_falls_back_to_des_on_short_history() -> None:
    bp = BpForecaster()
    assert bp.min_history == 6
    short = bp.predict(SERIES)
    assert short.value == pytest.approx(DesForecaster().predict(SERIES).value)
    assert short.note == "4 periods of history, the net needs 6; used des"


def test_bp_forecasts_a_flat_history_as_itself() -> None:
    assert BpForecaster().predict([3.0] * 8) == BpForecaster().predict([3.0] * 8)
    assert BpForecaster().predict([3.0] * 8).value == 3.0


def test_bp_learns_an_alternating_pattern_that_des_cannot() -> None:
    history = [5.0, 9.0] * 6  # next is 5
    bp = BpForecaster().predict(history)
    des = DesForecaster().predict(history)
    assert abs(bp.value - 5.0) < 1.0
    assert abs(bp.value - 5.0) < abs(des.value - 5.0)
    assert bp.value == BpForecaster().predict(history).value  # fixed random_state


def test_bp_iteration_cap_is_reported_not_warned() -> None:
    # Warnings are errors in this suite: a leaked ConvergenceWarning would fail the test.
    capped = BpForecaster(max_iter=2).predict([1.0, 4.0, 2.0, 8.0, 3.0, 9.0, 4.0, 7.0])
    assert math.isfinite(capped.value)
    assert capped.note == "stopped at max_iter=2"


def test_bp_multi_step_feeds_predictions_back() -> None:
    history = [5.0, 9.0] * 6
    two = BpForecaster().predict(history, steps=2).value
    assert abs(two - 9.0) < 1.5


# --- entropy weights -----------------------------------------------------------------------


def test_entropy_weights_by_hand() -> None:
    # rows: proportions p, entropy e = -sum p ln p / ln 4, d = 1 - e
    #   A (1,1,1,1): p = 1/4 each,  e = 1,   d = 0
    #   B (2,0,0,2): p = 1/2, 1/2,  e = 1/2, d = 1/2
    #   C (1,0,0,0): p = 1,         e = 0,   d = 1
    errors = [[1, 1, 1, 1], [2, 0, 0, 2], [1, 0, 0, 0]]
    # information: w = d / sum d = (0, 1/3, 2/3)
    assert entropy_weights(errors) == pytest.approx((0.0, 1 / 3, 2 / 3))
    # stability: w = (1 - d / sum d) / (m - 1) = (1/2, 1/3, 1/6)
    assert entropy_weights(errors, variant=EntropyVariant.STABILITY) == pytest.approx(
        (1 / 2, 1 / 3, 1 / 6)
    )


def test_entropy_edge_cases_never_give_nan() -> None:
    assert entropy_weights([[3.0, 1.0]]) == (1.0,)  # a single method
    assert entropy_weights([[0.0, 0.0], [1.0, 2.0]]) == (1.0, 0.0)  # an exact method takes all
    assert entropy_weights([[0.0, 0.0], [0.0, 0.0]]) == (0.5, 0.5)  # all exact: shared
    assert entropy_weights([[1e-16, 1e-16], [1.0, 2.0]]) == (1.0, 0.0)  # rounding noise is exact
    assert entropy_weights([[5.0], [1.0]]) == (0.5, 0.5)  # one period: no entropy to measure
    assert entropy_weights([[], []]) == (0.5, 0.5)
    assert entropy_weights([[1.0, 1.0], [3.0, 3.0]]) == (0.5, 0.5)  # all entropies 1


def test_entropy_weights_refuse_bad_input() -> None:
    with pytest.raises(ValueError, match="at least one"):
        entropy_weights([])
    with pytest.raises(ValueError, match="same number"):
        entropy_weights([[1.0, 2.0], [1.0]])
    with pytest.raises(ValueError, match="finite"):
        entropy_weights([[1.0, float("nan")], [1.0, 2.0]])


@given(
    st.integers(min_value=1, max_value=4).flatmap(
        lambda m: st.integers(min_value=0, max_value=6).flatmap(
            lambda t: st.lists(
                st.lists(st.floats(0, 1e9, allow_nan=False), min_size=t, max_size=t),
                min_size=m,
                max_size=m,
            )
        )
    ),
    st.sampled_from(list(EntropyVariant)),
)
def test_entropy_weights_are_always_a_distribution(
    errors: list[list[float]], variant: EntropyVariant
) -> None:
    weights = entropy_weights(errors, variant=variant)
    assert len(weights) == len(errors)
    assert all(math.isfinite(w) and -1e-12 <= w <= 1 + 1e-12 for w in weights)
    assert math.fsum(weights) == pytest.approx(1.0)


# --- combined forecast ---------------------------------------------------------------------


def test_combined_forecast_by_hand() -> None:
    # error_window 2 -> origins 2 and 3 of (10, 12, 14, 13):
    #   naive: predicts 12 then 14 -> errors (2, 1)
    #   DES(0.5): predicts 12.0 then 14.5 -> errors (2, 1.5)
    # entropies (ln 2 normalised): naive H(2/3, 1/3), DES H(4/7, 3/7)
    # forecasts: naive 13, DES 14.0
    forecaster = HeatForecaster(
        forecasters=[NaiveForecaster(), DesForecaster(alpha=0.5)], error_window=2
    )
    result = forecaster.forecast(SERIES)
    assert result.errors == {"naive": (2.0, 1.0), "des": (2.0, 1.5)}
    d_naive = 1 - _h([2 / 3, 1 / 3])
    d_des = 1 - _h([4 / 7, 3 / 7])
    w_naive = d_naive / (d_naive + d_des)
    assert result.weights["naive"] == pytest.approx(w_naive)
    assert result.weights["des"] == pytest.approx(1 - w_naive)
    assert result.forecasts == {"naive": 13.0, "des": pytest.approx(14.0)}
    assert result.value == pytest.approx(13 * w_naive + 14 * (1 - w_naive))
    assert result.value == pytest.approx(13.1531, abs=1e-4)


def test_default_combination_keeps_every_method_and_notes_fallbacks() -> None:
    result = HeatForecaster().forecast([4.0, 6.0, 5.0])
    assert set(result.forecasts) == {"des", "bp"}
    assert math.fsum(result.weights.values()) == pytest.approx(1.0)
    assert "used des" in result.notes["bp"]


def test_single_value_history_forecasts_itself() -> None:
    result = HeatForecaster().forecast([42.0])
    assert result.value == 42.0
    assert result.weights == {"des": 0.5, "bp": 0.5}


def test_forecaster_names_must_be_unique() -> None:
    with pytest.raises(ValueError, match="unique"):
        HeatForecaster(forecasters=[DesForecaster(), DesForecaster(alpha=0.7)])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=1, max_size=10))
def test_combined_forecast_is_always_finite(history: list[float]) -> None:
    result = HeatForecaster(forecasters=[NaiveForecaster(), DesForecaster(alpha="auto")]).forecast(
        history
    )
    assert math.isfinite(result.value)
    assert all(math.isfinite(v) for v in result.forecasts.values())
    assert math.fsum(result.weights.values()) == pytest.approx(1.0)


def test_a_fading_topic_is_never_forecast_below_zero() -> None:
    # DES(0.5) on a steep fall extrapolates the trend under zero: s1 = 9.375, s2 = 17.5, so
    # level 2*s1 - s2 = 1.25 and trend s1 - s2 = -8.125 -> -6.875. Heat cannot be negative.
    fading = [40.0, 30.0, 20.0, 10.0, 0.0]
    des = DesForecaster(alpha=0.5)
    assert des.predict(fading).value == pytest.approx(-6.875)  # the method alone
    result = HeatForecaster(forecasters=[des, NaiveForecaster()], error_window=2).forecast(fading)
    assert result.forecasts["des"] == 0.0
    assert "clipped at 0" in result.notes["des"]
    assert result.value == 0.0


@given(st.lists(st.floats(min_value=0.0, max_value=1e6), min_size=1, max_size=12))
@settings(max_examples=40, deadline=None)
def test_heat_forecasts_are_never_negative(history: list[float]) -> None:
    result = HeatForecaster(forecasters=[DesForecaster(alpha=0.9), NaiveForecaster()]).forecast(
        history
    )
    assert result.value >= 0.0
    assert all(value >= 0.0 for value in result.forecasts.values())
