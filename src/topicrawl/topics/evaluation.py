"""Accuracy measures for heat forecasts: MAPE, RMSE and rolling-origin evaluation."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["RollingEvaluation", "check_series", "mape", "rmse", "rolling_origin"]


def check_series(name: str, values: Sequence[float]) -> tuple[float, ...]:
    """Return ``values`` as a tuple of floats, or raise ``ValueError`` if any is NaN or infinite."""
    series = tuple(float(v) for v in values)
    for i, value in enumerate(series):
        if not math.isfinite(value):
            raise ValueError(f"{name}[{i}] is {value!r}; heat series must be finite")
    return series


def _paired(
    actual: Sequence[float], predicted: Sequence[float]
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    a = check_series("actual", actual)
    p = check_series("predicted", predicted)
    if len(a) != len(p):
        raise ValueError(f"{len(a)} actual values but {len(p)} predictions")
    return a, p


def mape(actual: Sequence[float], predicted: Sequence[float]) -> float | None:
    """Mean absolute percentage error, in percent, over the periods whose actual is not 0.

    A period with actual heat 0 has no percentage error, so it is left out; when every actual
    is 0 (or there are no periods) the MAPE is undefined and ``None`` is returned.
    """
    a, p = _paired(actual, predicted)
    terms = [abs((x - y) / x) for x, y in zip(a, p, strict=True) if x != 0.0]
    if not terms:
        return None
    return 100.0 * math.fsum(terms) / len(terms)


def rmse(actual: Sequence[float], predicted: Sequence[float]) -> float | None:
    """Root mean squared error; ``None`` when there are no periods."""
    a, p = _paired(actual, predicted)
    if not a:
        return None
    return math.sqrt(math.fsum((x - y) ** 2 for x, y in zip(a, p, strict=True)) / len(a))


@dataclass(frozen=True, slots=True)
class RollingEvaluation:
    """One-step-ahead forecasts from each origin ``t`` (trained on ``history[:t]``)."""

    origins: tuple[int, ...]
    actual: tuple[float, ...]
    predicted: tuple[float, ...]

    @property
    def errors(self) -> tuple[float, ...]:
        """Absolute errors, one per origin."""
        return tuple(abs(x - y) for x, y in zip(self.actual, self.predicted, strict=True))

    @property
    def mape(self) -> float | None:
        return mape(self.actual, self.predicted)

    @property
    def rmse(self) -> float | None:
        return rmse(self.actual, self.predicted)


def rolling_origin(
    history: Sequence[float],
    forecast: Callable[[Sequence[float]], float],
    *,
    first_origin: int = 1,
) -> RollingEvaluation:
    """Evaluate ``forecast`` one step ahead from every origin ``first_origin .. len - 1``.

    At origin ``t`` the forecaster sees ``history[:t]`` only and predicts ``history[t]``.
    """
    series = check_series("history", history)
    if first_origin < 1:
        raise ValueError("first_origin must be >= 1: a forecaster needs at least one value")
    origins = tuple(range(first_origin, len(series)))
    predicted = check_series("predicted", [forecast(series[:t]) for t in origins])
    return RollingEvaluation(
        origins=origins,
        actual=tuple(series[t] for t in origins),
        predicted=predicted,
    )
