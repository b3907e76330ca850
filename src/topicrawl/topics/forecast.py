"""Next-period topic heat: Brown's double exponential smoothing, a BP net, entropy-weighted mix.

Every forecaster takes a topic's heat history (oldest first, one value per period) and returns
a :class:`PointForecast`. :class:`HeatForecaster` runs several of them, measures each one's
recent one-step-ahead errors by rolling origin, and combines their forecasts with weights from
the entropy weight method (:func:`entropy_weights`).
"""

from __future__ import annotations

import enum
import itertools
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from topicrawl.topics.evaluation import check_series, rolling_origin

__all__ = [
    "ALPHA_GRID",
    "DEFAULT_ALPHA",
    "MAX_HEAT",
    "VOLATILE_ALPHA",
    "AlphaRule",
    "BpForecaster",
    "DesForecaster",
    "DesState",
    "EntropyVariant",
    "Forecaster",
    "HeatForecast",
    "HeatForecaster",
    "NaiveForecaster",
    "PointForecast",
    "brown_smoothing",
    "choose_alpha",
    "des_sse",
    "entropy_weights",
    "volatility",
    "volatility_alpha",
]

DEFAULT_ALPHA = 0.3
MAX_HEAT = 1e15  # far above any real heat; keeps every recursion below float overflow
VOLATILE_ALPHA = 0.6
ALPHA_GRID: tuple[float, ...] = tuple(round(0.05 * k, 2) for k in range(1, 20))  # 0.05 .. 0.95

AlphaRule = float | Literal["auto", "volatility"]


@dataclass(frozen=True, slots=True)
class PointForecast:
    """One method's forecast, with a note when it had to do something a user should know."""

    value: float
    note: str = ""


@runtime_checkable
class Forecaster(Protocol):
    """Forecasts a heat series ``steps`` periods past its last value."""

    @property
    def name(self) -> str: ...

    def predict(self, history: Sequence[float], *, steps: int = 1) -> PointForecast: ...


def _checked(history: Sequence[float], steps: int) -> tuple[float, ...]:
    series = check_series("history", history)
    if not series:
        raise ValueError("cannot forecast from an empty history")
    if any(abs(x) > MAX_HEAT for x in series):
        raise ValueError(f"heat values must lie within +-{MAX_HEAT:g}")
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    return series


class NaiveForecaster:
    """The last value, for every step ahead: the baseline any method must beat."""

    def __init__(self, *, name: str = "naive") -> None:
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def predict(self, history: Sequence[float], *, steps: int = 1) -> PointForecast:
        return PointForecast(_checked(history, steps)[-1])


# --- Brown's double exponential smoothing -------------------------------------------------


@dataclass(frozen=True, slots=True)
class DesState:
    """Brown's smoothed values after the last period: ``S1`` (single) and ``S2`` (double)."""

    s1: float
    s2: float
    alpha: float

    @property
    def level(self) -> float:
        """``a_t = 2 S1 - S2``."""
        return 2.0 * self.s1 - self.s2

    @property
    def trend(self) -> float:
        """``b_t = alpha / (1 - alpha) * (S1 - S2)``."""
        return self.alpha / (1.0 - self.alpha) * (self.s1 - self.s2)

    def forecast(self, steps: int = 1) -> float:
        """``a_t + m b_t``, ``m`` periods ahead."""
        return self.level + steps * self.trend


def _check_alpha(alpha: float) -> float:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be strictly between 0 and 1, got {alpha!r}")
    return float(alpha)


def brown_smoothing(history: Sequence[float], alpha: float) -> DesState:
    """Run Brown's recursions over ``history``.

    ``S1_t = alpha x_t + (1 - alpha) S1_{t-1}`` and ``S2_t = alpha S1_t + (1 - alpha) S2_{t-1}``,
    initialised with ``S1_0 = S2_0 = x_0`` (so the first forecast is the first value, with no
    trend).
    """
    series = _checked(history, 1)
    alpha = _check_alpha(alpha)
    s1 = s2 = series[0]
    for x in series[1:]:
        s1 = alpha * x + (1.0 - alpha) * s1
        s2 = alpha * s1 + (1.0 - alpha) * s2
    return DesState(s1=s1, s2=s2, alpha=alpha)


def des_sse(history: Sequence[float], alpha: float) -> float:
    """Sum of squared one-step-ahead errors of Brown's method over periods ``1 .. n-1``."""
    series = _checked(history, 1)
    alpha = _check_alpha(alpha)
    s1 = s2 = series[0]
    sse = 0.0
    for x in series[1:]:
        predicted = (2.0 * s1 - s2) + alpha / (1.0 - alpha) * (s1 - s2)
        sse += (x - predicted) ** 2
        s1 = alpha * x + (1.0 - alpha) * s1
        s2 = alpha * s1 + (1.0 - alpha) * s2
    return sse


def choose_alpha(history: Sequence[float], grid: Sequence[float] = ALPHA_GRID) -> float:
    """The alpha of ``grid`` with the least one-step-ahead SSE on ``history``.

    Ties go to the smaller alpha (the steadier forecast). Fewer than 3 values carry no
    information about the trend, so :data:`DEFAULT_ALPHA` is returned.
    """
    series = _checked(history, 1)
    if not grid:
        raise ValueError("the alpha grid is empty")
    if len(series) < 3:
        return DEFAULT_ALPHA
    best_alpha, best_sse = math.nan, math.inf
    for alpha in sorted(grid):
        sse = des_sse(series, alpha)
        if sse < best_sse:
            best_alpha, best_sse = alpha, sse
    # Only overflow (values near 1e154) makes every SSE infinite; the steady default is safe.
    return DEFAULT_ALPHA if math.isnan(best_alpha) else best_alpha


def volatility(history: Sequence[float]) -> float:
    """Mean absolute period-to-period change relative to the mean absolute level (0 if flat)."""
    series = _checked(history, 1)
    scale = math.fsum(abs(x) for x in series) / len(series)
    if len(series) < 2 or scale == 0.0:
        return 0.0
    changes = [abs(b - a) for a, b in itertools.pairwise(series)]
    return math.fsum(changes) / len(changes) / scale


def volatility_alpha(
    history: Sequence[float],
    *,
    steady: float = DEFAULT_ALPHA,
    volatile: float = VOLATILE_ALPHA,
    threshold: float = 0.25,
) -> float:
    """``volatile`` when the series moves by more than ``threshold`` of its level per period."""
    return volatile if volatility(history) > threshold else steady


class DesForecaster:
    """Brown's double exponential smoothing with a fixed or history-chosen alpha.

    Args:
        alpha: a number in (0, 1); ``"auto"`` for the SSE-minimising alpha of
            :data:`ALPHA_GRID`; ``"volatility"`` for :func:`volatility_alpha`.
    """

    def __init__(self, *, alpha: AlphaRule = DEFAULT_ALPHA, name: str = "des") -> None:
        if not isinstance(alpha, str):
            _check_alpha(alpha)
        elif alpha not in ("auto", "volatility"):
            raise ValueError(f"alpha must be a number, 'auto' or 'volatility', got {alpha!r}")
        self._alpha = alpha
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def alpha_for(self, history: Sequence[float]) -> float:
        """The alpha this forecaster uses for ``history``."""
        if self._alpha == "auto":
            return choose_alpha(history)
        if self._alpha == "volatility":
            return volatility_alpha(history)
        return float(self._alpha)

    def predict(self, history: Sequence[float], *, steps: int = 1) -> PointForecast:
        series = _checked(history, steps)
        alpha = self.alpha_for(series)
        note = "" if not isinstance(self._alpha, str) else f"alpha={alpha:g} ({self._alpha})"
        return PointForecast(brown_smoothing(series, alpha).forecast(steps), note)


# --- BP neural network ----------------------------------------------------------------------


class BpForecaster:
    """A small back-propagation net (scikit-learn MLPRegressor) over sliding windows.

    Each window of ``inputs + 1`` consecutive periods is one sample: ``inputs`` values in, the
    next one out. Values are min-max scaled to [0, 1] over the history before training and the
    output scaled back. Forecasts further than one step feed predictions back as inputs.

    With fewer than ``min_windows`` windows the net is not trained and ``fallback`` (Brown's
    method by default) answers instead; a flat history is forecast as itself. A net that stops
    at ``max_iter`` before the loss settles is still used (scikit-learn's ConvergenceWarning is
    silenced on purpose) and the forecast's note says so.
    """

    def __init__(
        self,
        *,
        inputs: int = 3,
        hidden: int = 3,
        learning_rate: float = 0.01,
        max_iter: int = 1000,
        tol: float = 1e-4,
        random_state: int = 0,
        min_windows: int = 3,
        fallback: Forecaster | None = None,
        name: str = "bp",
    ) -> None:
        if inputs < 1 or hidden < 1 or max_iter < 1 or min_windows < 1:
            raise ValueError("inputs, hidden, max_iter and min_windows must be >= 1")
        self._inputs = inputs
        self._hidden = hidden
        self._learning_rate = learning_rate
        self._max_iter = max_iter
        self._tol = tol
        self._random_state = random_state
        self._min_windows = min_windows
        self._fallback: Forecaster = fallback if fallback is not None else DesForecaster()
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def min_history(self) -> int:
        """The fewest periods the net is trained on; shorter histories use the fallback."""
        return self._inputs + self._min_windows

    def predict(self, history: Sequence[float], *, steps: int = 1) -> PointForecast:
        series = _checked(history, steps)
        if len(series) < self.min_history:
            fallback = self._fallback.predict(series, steps=steps)
            note = (
                f"{len(series)} periods of history, the net needs {self.min_history}; "
                f"used {self._fallback.name}"
            )
            return PointForecast(fallback.value, note)
        values = np.array(series, dtype=np.float64)
        low, high = float(values.min()), float(values.max())
        span = high - low
        if span <= 1e-12 * max(1.0, abs(high)):
            return PointForecast(high, "flat history")
        scaled = (values - low) / span
        # scikit-learn takes seconds to import: only pay for it when a net is trained.
        from sklearn.exceptions import ConvergenceWarning  # noqa: PLC0415
        from sklearn.neural_network import MLPRegressor  # noqa: PLC0415

        windows = np.lib.stride_tricks.sliding_window_view(scaled, self._inputs + 1)
        model = MLPRegressor(
            hidden_layer_sizes=(self._hidden,),
            activation="relu",
            solver="adam",
            learning_rate_init=self._learning_rate,
            max_iter=self._max_iter,
            tol=self._tol,
            random_state=self._random_state,
        )
        with warnings.catch_warnings():
            # Hitting max_iter is reported through the note below, not as a warning.
            warnings.filterwarnings("ignore", category=ConvergenceWarning)
            model.fit(windows[:, :-1], windows[:, -1])
        window = list(scaled[-self._inputs :])
        prediction = 0.0
        for _ in range(steps):
            prediction = float(model.predict(np.array([window]))[0])
            window = [*window[1:], prediction]
        value = low + prediction * span
        if not math.isfinite(value):
            fallback = self._fallback.predict(series, steps=steps)
            return PointForecast(fallback.value, f"net diverged; used {self._fallback.name}")
        note = "" if model.n_iter_ < self._max_iter else f"stopped at max_iter={self._max_iter}"
        return PointForecast(value, note)


# --- entropy weight combination -----------------------------------------------------------


class EntropyVariant(enum.StrEnum):
    """How entropies of the methods' error series become weights.

    ``INFORMATION``: ``w_j = (1 - e_j) / sum_k (1 - e_k)``, the classic entropy weight method.
    ``STABILITY``: ``w_j = (1 - d_j / sum_k d_k) / (m - 1)`` with ``d_j = 1 - e_j``, the form used
    for combined forecasting, which favours methods whose errors are evenly spread.
    """

    INFORMATION = "information"
    STABILITY = "stability"


def entropy_weights(
    errors: Sequence[Sequence[float]],
    *,
    variant: EntropyVariant = EntropyVariant.INFORMATION,
) -> tuple[float, ...]:
    """Weights of ``m`` methods from their past one-step errors (one row per method).

    Each row of absolute errors is normalised to proportions ``p_t = e_t / sum e``; its entropy
    is ``e_j = -sum p_t ln p_t / ln T`` (with ``0 ln 0 = 0``), in [0, 1].

    Edge cases, so no NaN ever comes out: one method gets weight 1; fewer than 2 periods of
    errors (no entropy to measure) or all entropies equal give equal weights; methods whose
    errors are all 0 (or at rounding-noise level, below 1e-9 of the largest method's total)
    were exact over the whole window and share all the weight between them.
    """
    rows = [check_series(f"errors[{j}]", row) for j, row in enumerate(errors)]
    m = len(rows)
    if m == 0:
        raise ValueError("entropy weights need at least one method")
    lengths = {len(row) for row in rows}
    if len(lengths) != 1:
        raise ValueError(f"every method needs the same number of errors, got {sorted(lengths)}")
    if m == 1:
        return (1.0,)
    periods = lengths.pop()
    equal = tuple(1.0 / m for _ in rows)
    if periods < 2:
        return equal
    e = np.abs(np.array(rows, dtype=np.float64))
    totals = e.sum(axis=1)
    # Errors at rounding-noise level (1e-16 on a flat series) count as exact.
    exact = totals <= 1e-9 * float(totals.max())
    if exact.any():
        share = 1.0 / float(exact.sum())
        return tuple(share if is_exact else 0.0 for is_exact in exact)
    p = e / totals[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0.0, p * np.log(p), 0.0)
    entropy = np.clip(-terms.sum(axis=1) / math.log(periods), 0.0, 1.0)
    diversity = 1.0 - entropy
    total = float(diversity.sum())
    if total <= 1e-12:
        return equal
    if variant is EntropyVariant.INFORMATION:
        weights = diversity / total
    else:
        weights = (1.0 - diversity / total) / (m - 1)
    return tuple(float(w) for w in weights)


@dataclass(frozen=True, slots=True)
class HeatForecast:
    """A combined heat forecast, with every method's own forecast, weight and recent errors.

    Heat is never negative, so neither is any forecast here: a method whose extrapolated
    falling trend goes below zero is clipped at 0 (its note gives the value it reached), and
    the combination, a weighted mean of those, is then at least 0 too.
    """

    value: float
    steps: int
    forecasts: Mapping[str, float] = field(compare=False, hash=False)
    weights: Mapping[str, float] = field(compare=False, hash=False)
    errors: Mapping[str, tuple[float, ...]] = field(compare=False, hash=False)
    notes: Mapping[str, str] = field(compare=False, hash=False)


class HeatForecaster:
    """Combines several forecasters by the entropy weights of their recent one-step errors.

    Args:
        forecasters: the methods; default Brown's DES (alpha 0.3) and the BP net.
        error_window: how many of the latest periods are re-forecast (each from the history
            before it) to measure each method's errors.
        variant: see :class:`EntropyVariant`.
    """

    def __init__(
        self,
        *,
        forecasters: Sequence[Forecaster] | None = None,
        error_window: int = 4,
        variant: EntropyVariant = EntropyVariant.INFORMATION,
    ) -> None:
        methods = (
            tuple(forecasters) if forecasters is not None else (DesForecaster(), BpForecaster())
        )
        if not methods:
            raise ValueError("a heat forecaster needs at least one method")
        names = [method.name for method in methods]
        if len(set(names)) != len(names):
            raise ValueError(f"forecaster names must be unique, got {names}")
        if error_window < 1:
            raise ValueError("error_window must be >= 1")
        self._methods = methods
        self._error_window = error_window
        self._variant = variant

    def forecast(self, history: Sequence[float], *, steps: int = 1) -> HeatForecast:
        """Forecast ``steps`` periods past the end of ``history``."""
        series = _checked(history, steps)
        first_origin = max(1, len(series) - self._error_window)
        predictions: dict[str, PointForecast] = {}
        errors: dict[str, tuple[float, ...]] = {}
        for method in self._methods:
            predictions[method.name] = _not_negative(method.predict(series, steps=steps))
            evaluation = rolling_origin(series, _one_step(method), first_origin=first_origin)
            errors[method.name] = evaluation.errors
        names = [method.name for method in self._methods]
        weights = entropy_weights([errors[n] for n in names], variant=self._variant)
        value = math.fsum(w * predictions[n].value for w, n in zip(weights, names, strict=True))
        return HeatForecast(
            value=value,
            steps=steps,
            forecasts=MappingProxyType({n: predictions[n].value for n in names}),
            weights=MappingProxyType(dict(zip(names, weights, strict=True))),
            errors=MappingProxyType(errors),
            notes=MappingProxyType({n: p.note for n, p in predictions.items() if p.note}),
        )


def _not_negative(forecast: PointForecast) -> PointForecast:
    """The forecast clipped at 0 (heat cannot fall below nothing), saying so in its note."""
    if forecast.value >= 0.0:
        return forecast
    clipped = f"extrapolated to {forecast.value:.4g}, clipped at 0"
    return PointForecast(0.0, f"{forecast.note}; {clipped}" if forecast.note else clipped)


def _one_step(method: Forecaster) -> Callable[[Sequence[float]], float]:
    # Measured on the clipped forecasts: those are what the combination uses.
    def forecast(history: Sequence[float]) -> float:
        return max(0.0, method.predict(history).value)

    return forecast
