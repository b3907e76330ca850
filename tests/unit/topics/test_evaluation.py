"""MAPE, RMSE and rolling-origin evaluation by hand."""

from __future__ import annotations

import math

import pytest

from topicrawl.topics import DesForecaster, NaiveForecaster, mape, rmse, rolling_origin


def test_mape_and_rmse_by_hand() -> None:
    actual = [100.0, 200.0, 0.0]
    predicted = [110.0, 180.0, 5.0]
    # MAPE skips the zero actual: (10/100 + 20/200) / 2 = 10%
    assert mape(actual, predicted) == pytest.approx(10.0)
    # RMSE = sqrt((100 + 400 + 25) / 3)
    assert rmse(actual, predicted) == pytest.approx(math.sqrt(175.0))


def test_undefined_measures_are_none_not_nan() -> None:
    assert mape([0.0, 0.0], [1.0, 2.0]) is None
    assert mape([], []) is None
    assert rmse([], []) is None


def test_mismatched_or_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="2 actual values but 1"):
        rmse([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="finite"):
        mape([1.0], [float("nan")])


def test_rolling_origin_only_shows_the_past() -> None:
    history = [10.0, 12.0, 14.0, 13.0]
    evaluation = rolling_origin(history, lambda h: NaiveForecaster().predict(h).value)
    assert evaluation.origins == (1, 2, 3)
    assert evaluation.predicted == (10.0, 12.0, 14.0)
    assert evaluation.errors == (2.0, 2.0, 1.0)
    assert evaluation.rmse == pytest.approx(math.sqrt(3.0))
    assert evaluation.mape == pytest.approx(100 * (2 / 12 + 2 / 14 + 1 / 13) / 3)


def test_rolling_origin_compares_methods() -> None:
    trend = [float(x) for x in range(10, 30, 2)]
    naive = rolling_origin(trend, lambda h: NaiveForecaster().predict(h).value, first_origin=3)
    des = rolling_origin(trend, lambda h: DesForecaster(alpha=0.5).predict(h).value, first_origin=3)
    assert naive.rmse == pytest.approx(2.0)
    assert des.rmse is not None
    assert des.rmse < naive.rmse  # DES follows the trend, the naive forecast lags it
    with pytest.raises(ValueError, match="first_origin"):
        rolling_origin(trend, lambda h: 0.0, first_origin=0)
