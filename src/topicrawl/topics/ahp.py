"""Indicator weights by the analytic hierarchy process (AHP), and the post and topic heat they give.

A judgment matrix ``A`` holds pairwise judgments on Saaty's 1-9 scale: ``A[i][j] = 3`` says
indicator ``i`` is moderately more important than ``j``, and ``A[j][i] = 1/3``. Weights come
from the principal eigenvector (Saaty's method) or from the arithmetic-mean approximation
(normalise each column, average each row). Consistency is checked by
``CI = (lambda_max - n) / (n - 1)`` and ``CR = CI / RI(n)``; a matrix with ``CR > 0.1`` is
rejected with :class:`InconsistentJudgmentError`.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from topicrawl.core.errors import ConfigError

__all__ = [
    "DEFAULT_HEAT_JUDGMENT",
    "HEAT_INDICATORS",
    "MAX_CONSISTENCY_RATIO",
    "RANDOM_INDEX",
    "AhpResult",
    "HeatWeights",
    "InconsistentJudgmentError",
    "InvalidJudgmentMatrixError",
    "PostEngagement",
    "WeightMethod",
    "ahp_weights",
    "arithmetic_mean_weights",
    "consistency_index",
    "consistency_ratio",
    "default_heat_weights",
    "eigenvector_weights",
    "judgment_matrix_from_upper",
    "post_heat",
    "topic_heat",
    "validate_judgment_matrix",
]

FloatArray = npt.NDArray[np.float64]

# Saaty's random consistency index: the mean CI of random reciprocal matrices of order n
# (n <= 10 from Saaty 1980, n = 11..15 from Saaty's later extended table).
RANDOM_INDEX: Mapping[int, float] = MappingProxyType(
    {
        1: 0.0,
        2: 0.0,
        3: 0.58,
        4: 0.90,
        5: 1.12,
        6: 1.24,
        7: 1.32,
        8: 1.41,
        9: 1.45,
        10: 1.49,
        11: 1.51,
        12: 1.48,
        13: 1.56,
        14: 1.57,
        15: 1.59,
    }
)

MAX_CONSISTENCY_RATIO = 0.1

# The order of the heat judgment matrix's rows and columns.
HEAT_INDICATORS: tuple[str, str, str] = ("comments", "reposts", "likes")

# Comments are 4x as important as reposts and 6x as important as likes; reposts and likes are
# judged equal. Eigenvector weights: comments 0.710, reposts 0.155, likes 0.135 (CR 0.016).
# Of all matrices on the 1-9 scale with CR <= 0.1 this one is closest (least squares) to the
# target weights 0.70 / 0.16 / 0.14.
DEFAULT_HEAT_JUDGMENT: tuple[tuple[float, ...], ...] = (
    (1.0, 4.0, 6.0),
    (1.0 / 4.0, 1.0, 1.0),
    (1.0 / 6.0, 1.0, 1.0),
)


class WeightMethod(enum.StrEnum):
    """How weights are derived from a judgment matrix."""

    EIGENVECTOR = "eigenvector"
    ARITHMETIC_MEAN = "arithmetic_mean"


class InvalidJudgmentMatrixError(ConfigError):
    """The judgment matrix is not square, positive and reciprocal."""


class InconsistentJudgmentError(ConfigError):
    """The judgments contradict each other too much (CR over the limit): revise them.

    Args:
        cr: the consistency ratio found.
        limit: the largest ratio accepted.
    """

    def __init__(self, cr: float, limit: float) -> None:
        super().__init__(
            f"judgment matrix is inconsistent: consistency ratio CR = {cr:.3f} > {limit:g}; "
            "revise the pairwise judgments"
        )
        self.cr = cr
        self.limit = limit


@dataclass(frozen=True, slots=True)
class AhpResult:
    """Weights from a judgment matrix and the consistency figures that vouch for them."""

    weights: tuple[float, ...]
    lambda_max: float
    ci: float
    cr: float
    method: WeightMethod


def validate_judgment_matrix(
    matrix: Sequence[Sequence[float]] | FloatArray, *, tolerance: float = 0.02
) -> FloatArray:
    """Check a judgment matrix and return it made exactly reciprocal.

    Entries typed with two decimals (``0.33`` for 1/3) pass: ``a_ij * a_ji`` may be off 1 by
    ``tolerance``. The returned matrix replaces each pair by ``sqrt(a_ij / a_ji)`` and its
    inverse, which treats both halves alike and leaves an exact matrix unchanged.

    Raises:
        InvalidJudgmentMatrixError: not square, empty, larger than 15, not finite and
            positive, diagonal not 1, or not reciprocal within ``tolerance``.
    """
    try:
        a = np.array(matrix, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidJudgmentMatrixError(
            f"judgment matrix must be a square table of numbers: {exc}"
        ) from exc
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] == 0:
        raise InvalidJudgmentMatrixError(
            f"judgment matrix must be square and non-empty, got shape {a.shape}"
        )
    n = a.shape[0]
    if n > max(RANDOM_INDEX):
        raise InvalidJudgmentMatrixError(
            f"judgment matrix of order {n}: Saaty's random index is tabulated for n <= 15"
        )
    if not np.all(np.isfinite(a)) or np.any(a <= 0):
        raise InvalidJudgmentMatrixError("judgment matrix entries must be finite and positive")
    diagonal_off = np.abs(np.diag(a) - 1.0)
    if np.any(diagonal_off > tolerance):
        raise InvalidJudgmentMatrixError("judgment matrix diagonal must be 1")
    products = a * a.T
    worst = np.unravel_index(int(np.argmax(np.abs(products - 1.0))), products.shape)
    i, j = int(worst[0]), int(worst[1])
    if abs(products[i, j] - 1.0) > tolerance:
        raise InvalidJudgmentMatrixError(
            f"judgment matrix is not reciprocal: a[{i}][{j}] = {a[i, j]:g} but "
            f"a[{j}][{i}] = {a[j, i]:g} (should be {1.0 / a[i, j]:g})"
        )
    exact: FloatArray = np.sqrt(a / a.T)
    return exact


def judgment_matrix_from_upper(n: int, judgments: Sequence[float]) -> FloatArray:
    """Build an ``n x n`` reciprocal matrix from its upper triangle, given row by row.

    ``judgment_matrix_from_upper(3, [4, 6, 1])`` is ``[[1, 4, 6], [1/4, 1, 1], [1/6, 1, 1]]``.
    """
    expected = n * (n - 1) // 2
    if n < 1 or len(judgments) != expected:
        raise InvalidJudgmentMatrixError(
            f"a matrix of order {n} needs {expected} upper-triangle judgments, got {len(judgments)}"
        )
    a = np.ones((n, n), dtype=np.float64)
    rows, cols = np.triu_indices(n, k=1)
    values = np.array(judgments, dtype=np.float64)
    if not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise InvalidJudgmentMatrixError("judgments must be finite and positive")
    a[rows, cols] = values
    a[cols, rows] = 1.0 / values
    return a


def eigenvector_weights(matrix: FloatArray) -> tuple[FloatArray, float]:
    """Saaty's weights: the principal eigenvector normalised to sum 1, and ``lambda_max``.

    ``matrix`` must be a validated positive matrix, whose Perron root is real and largest.
    """
    eigenvalues, eigenvectors = np.linalg.eig(matrix)
    k = int(np.argmax(eigenvalues.real))
    vector = np.abs(eigenvectors[:, k].real)
    weights: FloatArray = vector / vector.sum()
    return weights, float(eigenvalues[k].real)


def arithmetic_mean_weights(matrix: FloatArray) -> tuple[FloatArray, float]:
    """Approximate weights: normalise each column to sum 1, then average each row.

    ``lambda_max`` is estimated as the mean of ``(A w)_i / w_i``.
    """
    normalised = matrix / matrix.sum(axis=0, keepdims=True)
    weights: FloatArray = normalised.mean(axis=1)
    lambda_max = float(np.mean((matrix @ weights) / weights))
    return weights, lambda_max


def consistency_index(lambda_max: float, n: int) -> float:
    """``CI = (lambda_max - n) / (n - 1)``; 0 for ``n <= 2``, never negative (rounding)."""
    if n <= 2:
        return 0.0
    return max(0.0, (lambda_max - n) / (n - 1))


def consistency_ratio(lambda_max: float, n: int) -> float:
    """``CR = CI / RI(n)``; 0 where ``RI`` is 0 (``n <= 2`` is always consistent)."""
    if n not in RANDOM_INDEX:
        raise InvalidJudgmentMatrixError(f"no random index for a matrix of order {n}")
    ri = RANDOM_INDEX[n]
    if ri == 0.0:
        return 0.0
    return consistency_index(lambda_max, n) / ri


def ahp_weights(
    matrix: Sequence[Sequence[float]] | FloatArray,
    *,
    method: WeightMethod = WeightMethod.EIGENVECTOR,
    max_cr: float = MAX_CONSISTENCY_RATIO,
    tolerance: float = 0.02,
) -> AhpResult:
    """Weights of the indicators of a judgment matrix, checked for consistency.

    Raises:
        InvalidJudgmentMatrixError: the matrix is malformed (see :func:`validate_judgment_matrix`).
        InconsistentJudgmentError: ``CR > max_cr``.
    """
    a = validate_judgment_matrix(matrix, tolerance=tolerance)
    n = a.shape[0]
    if method is WeightMethod.EIGENVECTOR:
        weights, lambda_max = eigenvector_weights(a)
    else:
        weights, lambda_max = arithmetic_mean_weights(a)
    cr = consistency_ratio(lambda_max, n)
    if cr > max_cr:
        raise InconsistentJudgmentError(cr, max_cr)
    return AhpResult(
        weights=tuple(float(w) for w in weights),
        lambda_max=lambda_max,
        ci=consistency_index(lambda_max, n),
        cr=cr,
        method=method,
    )


def _check_count(name: str, value: float) -> None:
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite count >= 0, got {value!r}")


@dataclass(frozen=True, slots=True)
class PostEngagement:
    """A post's engagement counts (on Mastodon: reblogs, favourites, replies)."""

    reposts: float
    likes: float
    comments: float

    def __post_init__(self) -> None:
        _check_count("reposts", self.reposts)
        _check_count("likes", self.likes)
        _check_count("comments", self.comments)


@dataclass(frozen=True, slots=True)
class HeatWeights:
    """Weights of the three heat indicators; they sum to 1."""

    reposts: float
    likes: float
    comments: float

    @classmethod
    def from_judgment(
        cls,
        matrix: Sequence[Sequence[float]] | FloatArray,
        *,
        method: WeightMethod = WeightMethod.EIGENVECTOR,
        max_cr: float = MAX_CONSISTENCY_RATIO,
    ) -> HeatWeights:
        """Weights from a 3x3 judgment matrix ordered as :data:`HEAT_INDICATORS`."""
        result = ahp_weights(matrix, method=method, max_cr=max_cr)
        if len(result.weights) != len(HEAT_INDICATORS):
            raise InvalidJudgmentMatrixError(
                f"the heat judgment matrix is 3x3 over {HEAT_INDICATORS}, "
                f"got order {len(result.weights)}"
            )
        comments, reposts, likes = result.weights
        return cls(reposts=reposts, likes=likes, comments=comments)


@cache
def default_heat_weights() -> HeatWeights:
    """Weights from :data:`DEFAULT_HEAT_JUDGMENT` (comments ~0.71, reposts ~0.16, likes ~0.14)."""
    return HeatWeights.from_judgment(DEFAULT_HEAT_JUDGMENT)


def post_heat(post: PostEngagement, weights: HeatWeights) -> float:
    """A post's heat: the weighted sum of its reposts, likes and comments."""
    return (
        weights.reposts * post.reposts
        + weights.likes * post.likes
        + weights.comments * post.comments
    )


def topic_heat(posts: Iterable[PostEngagement], weights: HeatWeights) -> float:
    """A topic's heat for one period: the mean heat of its posts (0 when it has none)."""
    heats = [post_heat(post, weights) for post in posts]
    return math.fsum(heats) / len(heats) if heats else 0.0
