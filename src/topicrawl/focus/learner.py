"""An online link scorer: what leads to relevant pages on this site, learned during the crawl.

Each link is described by the component scores the focused strategy gave it (its
``reasons``: anchor and block scores, inherited score, the parent's relevance and hub score,
family yield, directory factor, template flag), its depth, and hashed words of its URL
directory, file name and anchor. When a page is fetched, the link that led to it becomes a
training example labelled with the page's verdict (relevant or not by the strategy's
threshold). Every ``every`` pages, scikit-learn's ``SGDClassifier(loss="log_loss")`` is
updated with ``partial_fit`` on the examples gathered since (the numeric part standardised
by ``StandardScaler.partial_fit``). A link's priority is then

    (1 - w) * prior + w * P(relevant | link),   w = min(max_weight, n / (n + evidence))

with ``n`` the examples learned from, and ``w = 0`` until both verdicts have been seen. A
share ``explore`` of the links (by a seeded hash of their URL, so the same links every run)
keep the prior alone, so the crawl does not lock onto what it learned first.

Pure: no I/O. The state (coefficients, scaler, counts) is plain numbers, for JSON.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from topicrawl.core.lazy import LazyModule
from topicrawl.core.models import Request
from topicrawl.focus.families import URL_MEMO, URL_MEMO_CHARS
from topicrawl.focus.links import split_identifiers, url_word_pair

if TYPE_CHECKING:
    import numpy as np
    from scipy import sparse
    from sklearn import linear_model, preprocessing
    from sklearn.utils import murmurhash3_32
else:
    np = LazyModule("numpy")
    sparse = LazyModule("scipy.sparse")
    linear_model = LazyModule("sklearn.linear_model")
    preprocessing = LazyModule("sklearn.preprocessing")

    def murmurhash3_32(key: str, seed: int = 0, positive: bool = False) -> int:
        from sklearn.utils import murmurhash3_32 as hashed  # noqa: PLC0415 - lazy

        return int(hashed(key, seed=seed, positive=positive))


__all__ = [
    "LIFT_RANGE",
    "NUMERIC_FEATURES",
    "LearnerSettings",
    "LearnerState",
    "LinkLearner",
    "blend",
    "blend_weight",
    "lift_blend",
    "link_tokens",
]

NUMERIC_FEATURES: tuple[str, ...] = (
    "prior",
    "anchor",
    "block",
    "inherited",
    "hub",
    "importance",
    "page",
    "family",
    "directory",
    "template",
    "depth",
)
"""The numeric features of a link, in column order: its ``reasons`` and its depth."""

_MAX_ANCHOR_WORDS = 8
_MAX_NAMES = 50_000  # hashed feature ids whose words are remembered, for display


@dataclass(frozen=True, slots=True, kw_only=True)
class LearnerSettings:
    """How the link learner learns and how much it is trusted.

    Args:
        every: pages between two model updates (the examples gathered meanwhile are one
            ``partial_fit`` batch).
        evidence: ``k`` in the blend weight ``n / (n + k)``.
        max_weight: the blend weight never exceeds this (the prior always keeps a say).
        explore: share of links scored by the prior alone.
        hash_bits: the words are hashed into ``2 ** hash_bits`` columns.
        alpha: the L2 regularisation of the SGD model.
        eta0: with a value above 0, a constant SGD step of ``eta0`` (for hand-checked
            updates); 0: scikit-learn's ``optimal`` schedule.
        seed: seeds the SGD shuffle and the choice of explored links.
    """

    every: int = 25
    evidence: float = 100.0
    max_weight: float = 0.5
    explore: float = 0.1
    hash_bits: int = 14
    alpha: float = 1e-3
    eta0: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.every < 1 or self.evidence <= 0.0 or not 1 <= self.hash_bits <= 24:
            raise ValueError("every must be >= 1, evidence > 0, hash_bits in [1, 24]")
        if not (0.0 <= self.max_weight <= 1.0 and 0.0 <= self.explore <= 1.0):
            raise ValueError("max_weight and explore must be in [0, 1]")
        if self.alpha <= 0.0 or self.eta0 < 0.0:
            raise ValueError("alpha must be > 0 and eta0 >= 0")


def blend_weight(examples: int, *, evidence: float, max_weight: float, both: bool) -> float:
    """How much the model is trusted: ``min(max_weight, n / (n + evidence))``, 0 until both
    verdicts were seen (``both``)."""
    if not both or examples <= 0:
        return 0.0
    return min(max_weight, examples / (examples + evidence))


def blend(prior: float, model: float, weight: float) -> float:
    """``(1 - w) * prior + w * model``."""
    return (1.0 - weight) * prior + weight * model


LIFT_RANGE = 4.0
"""``lift_blend`` keeps the model's lift within ``[1 / LIFT_RANGE, LIFT_RANGE]``."""


def lift_blend(prior: float, model: float, weight: float, *, base: float) -> float:
    """``prior * (model / base) ** w``: the prior moved by the model's lift over the crawl's
    relevant share ``base`` (clipped to ``[1/4, 4]``), so the priority keeps the prior's
    scale (a probability blended in linearly outweighs priorities of a few tenths: the
    model's spread over links is wider than the prior's). ``base <= 0``: the prior."""
    if base <= 0.0 or weight <= 0.0:
        return prior
    lift = min(max(model / base, 1.0 / LIFT_RANGE), LIFT_RANGE)
    return float(prior * lift**weight)


@functools.lru_cache(maxsize=URL_MEMO)
def _url_tokens(url: str) -> tuple[str, ...]:
    file_words, directory_words = url_word_pair(url)
    directory = [f"d:{w.lower()}" for w in directory_words.split()]
    files = [f"u:{w.lower()}" for w in file_words.split()[len(directory) :]]
    return tuple(dict.fromkeys([*directory, *files]))


@functools.lru_cache(maxsize=URL_MEMO)
def _anchor_tokens(anchor: str) -> tuple[str, ...]:
    words = split_identifiers(anchor).lower().split()[:_MAX_ANCHOR_WORDS]
    return tuple(dict.fromkeys(f"a:{w}" for w in words if w.isalnum() or w.isalpha()))


def link_tokens(url: str, anchor: str) -> tuple[str, ...]:
    """The word features of a link: ``d:`` its URL directory's words, ``u:`` its file
    name's, ``a:`` its anchor's (at most 8), lower-cased, each once."""
    by_url = _url_tokens(url) if len(url) <= URL_MEMO_CHARS else _url_tokens.__wrapped__(url)
    return by_url + _anchor_tokens(anchor[:200])


@dataclass(frozen=True, slots=True)
class LearnerState:
    """The learner as numbers: counts, the SGD model (non-zero coefficients by column) and
    the scaler, and the strongest features (for display)."""

    examples: int
    positives: int
    negatives: int
    updates: int
    intercept: float
    coefficients: tuple[tuple[int, float], ...]
    sgd_steps: float
    scaler_mean: tuple[float, ...]
    scaler_var: tuple[float, ...]
    scaler_seen: int
    strongest: tuple[tuple[str, float], ...]
    weight: float

    def to_dict(self) -> dict[str, object]:
        return {
            "examples": self.examples,
            "positives": self.positives,
            "negatives": self.negatives,
            "updates": self.updates,
            "intercept": self.intercept,
            "coefficients": [list(item) for item in self.coefficients],
            "sgd_steps": self.sgd_steps,
            "scaler_mean": list(self.scaler_mean),
            "scaler_var": list(self.scaler_var),
            "scaler_seen": self.scaler_seen,
            "strongest": [list(item) for item in self.strongest],
            "weight": self.weight,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> LearnerState:
        """Read :meth:`to_dict`'s output.

        Raises:
            ValueError, TypeError, KeyError: it is not such a dict.
        """
        return cls(
            examples=int(data["examples"]),  # type: ignore[call-overload]
            positives=int(data["positives"]),  # type: ignore[call-overload]
            negatives=int(data["negatives"]),  # type: ignore[call-overload]
            updates=int(data["updates"]),  # type: ignore[call-overload]
            intercept=_finite(data["intercept"]),
            coefficients=tuple(
                (int(i), _finite(v))
                for i, v in data["coefficients"]  # type: ignore[attr-defined]
            ),
            sgd_steps=_finite(data["sgd_steps"]),
            scaler_mean=tuple(_finite(v) for v in data["scaler_mean"]),  # type: ignore[attr-defined]
            scaler_var=tuple(_finite(v) for v in data["scaler_var"]),  # type: ignore[attr-defined]
            scaler_seen=int(data["scaler_seen"]),  # type: ignore[call-overload]
            strongest=tuple(
                (str(n), _finite(v))
                for n, v in data["strongest"]  # type: ignore[attr-defined]
            ),
            weight=_finite(data["weight"]),
        )


def _finite(value: object) -> float:
    number = float(value)  # type: ignore[arg-type]
    if not math.isfinite(number):
        raise ValueError(f"{value!r} is not a finite number")
    return number


class LinkLearner:
    """The online model over link features, its training batch and its blend weight."""

    def __init__(self, settings: LearnerSettings) -> None:
        self.settings = settings
        self._columns = 2**settings.hash_bits
        self._dense = len(NUMERIC_FEATURES)
        self._model = linear_model.SGDClassifier(
            loss="log_loss",
            alpha=settings.alpha,
            learning_rate="constant" if settings.eta0 else "optimal",
            eta0=settings.eta0 or 0.01,
            random_state=settings.seed,
        )
        self._scaler = preprocessing.StandardScaler()
        self._batch: list[tuple[Request, bool]] = []
        self._names: dict[int, str] = {}
        self._hashes: dict[str, int] = {}
        self.examples = 0
        self.positives = 0
        self.negatives = 0
        self.updates = 0
        # The model's weights as plain arrays, for scoring a page's links without sklearn's
        # input checks (the same linear function as ``decision_function``).
        self._coef_dense: np.ndarray | None = None
        self._coef_words: np.ndarray | None = None
        self._intercept = 0.0

    @property
    def base_rate(self) -> float:
        """The share of the examples learned from that were relevant (0 before any)."""
        return self.positives / self.examples if self.examples else 0.0

    @property
    def weight(self) -> float:
        """The blend weight of the model now."""
        s = self.settings
        both = self.positives > 0 and self.negatives > 0
        return blend_weight(self.examples, evidence=s.evidence, max_weight=s.max_weight, both=both)

    def explores(self, url: str) -> bool:
        """Whether ``url`` is one of the links scored by the prior alone."""
        share = self.settings.explore
        if share <= 0.0:
            return False
        drawn = int(murmurhash3_32(url, seed=self.settings.seed, positive=True))
        return drawn % 10_000 < share * 1e4

    def observe(self, request: Request, *, relevant: bool) -> bool:
        """A page was fetched through ``request`` and found ``relevant`` or not: one example.
        Every ``every`` examples the model is updated; returns whether it was."""
        self._batch.append((request, relevant))
        if len(self._batch) < self.settings.every:
            return False
        self.update()
        return True

    def update(self) -> None:
        """Learn from the examples gathered since the last update."""
        batch, self._batch = self._batch, []
        if not batch:
            return
        dense = self._numeric([r for r, _ in batch])
        self._scaler.partial_fit(dense)
        labels = np.array([1 if relevant else 0 for _, relevant in batch])
        matrix = self._matrix([r for r, _ in batch], dense)
        self._model.partial_fit(matrix, labels, classes=np.array([0, 1]))
        self.examples += len(batch)
        self.positives += int(labels.sum())
        self.negatives += len(batch) - int(labels.sum())
        self.updates += 1
        self._copy_weights()

    def probabilities(self, requests: Sequence[Request]) -> np.ndarray:
        """P(relevant) of each link by the model (0.5 each before the first update)."""
        if self._coef_dense is None or self._coef_words is None or not requests:
            return np.full(len(requests), 0.5)
        dense = self._scaler.transform(self._numeric(requests))
        scores = dense @ self._coef_dense + self._intercept
        words = self._coef_words
        for row, request in enumerate(requests):
            ids = self._ids(link_tokens(request.url, request.anchor))
            if ids:
                scores[row] += words[ids].sum()
        chances: np.ndarray = 1.0 / (1.0 + np.exp(-np.clip(scores, -30.0, 30.0)))
        return chances

    def decision(self, requests: Sequence[Request]) -> np.ndarray:
        """The SGD model's own ``decision_function`` on the links (for checking)."""
        dense = self._numeric(requests)
        return self._model.decision_function(self._matrix(requests, dense))  # type: ignore[no-any-return]

    def strongest(self, count: int = 5) -> tuple[tuple[str, float], ...]:
        """The ``count`` most positive then the ``count`` most negative features, by
        coefficient (numeric features on the standardised scale)."""
        if self._coef_dense is None or self._coef_words is None:
            return ()
        named = [
            (name, float(w)) for name, w in zip(NUMERIC_FEATURES, self._coef_dense, strict=True)
        ]
        named += [(self._names[i], float(self._coef_words[i])) for i in self._names]
        named = [item for item in named if item[1] != 0.0]
        ranked = sorted(named, key=lambda item: item[1], reverse=True)
        positive = [item for item in ranked[:count] if item[1] > 0.0]
        negative = [item for item in ranked[::-1][:count] if item[1] < 0.0]
        return (*positive, *negative)

    def state(self) -> LearnerState:
        """The learner as numbers (see :meth:`restore`)."""
        coefficients: tuple[tuple[int, float], ...] = ()
        steps, seen = 0.0, 0
        mean: tuple[float, ...] = ()
        var: tuple[float, ...] = ()
        if self._coef_dense is not None:
            coef = self._model.coef_[0]
            coefficients = tuple((int(i), float(coef[i])) for i in np.flatnonzero(coef))
            steps = float(self._model.t_)
            mean = tuple(float(v) for v in self._scaler.mean_)
            var = tuple(float(v) for v in self._scaler.var_)
            seen = int(self._scaler.n_samples_seen_)
        return LearnerState(
            examples=self.examples,
            positives=self.positives,
            negatives=self.negatives,
            updates=self.updates,
            intercept=self._intercept,
            coefficients=coefficients,
            sgd_steps=steps,
            scaler_mean=mean,
            scaler_var=var,
            scaler_seen=seen,
            strongest=self.strongest(),
            weight=self.weight,
        )

    def restore(self, state: LearnerState) -> None:
        """Continue from a saved state: the model and scaler take its numbers, and the next
        ``partial_fit`` goes on from them.

        Raises:
            ValueError: the state does not fit these settings (another ``hash_bits``).
        """
        self.examples, self.updates = state.examples, state.updates
        self.positives, self.negatives = state.positives, state.negatives
        if not state.scaler_mean:
            return
        width = self._dense + self._columns
        if len(state.scaler_mean) != self._dense or any(i >= width for i, _ in state.coefficients):
            raise ValueError("the saved link learner has other features than this one")
        coef = np.zeros((1, width))
        for index, value in state.coefficients:
            coef[0, index] = value
        model = self._model
        model.classes_ = np.array([0, 1])
        model.coef_ = coef
        model.intercept_ = np.array([state.intercept])
        model.t_ = state.sgd_steps
        model.n_features_in_ = width
        scaler = self._scaler
        scaler.mean_ = np.array(state.scaler_mean)
        scaler.var_ = np.array(state.scaler_var)
        scaler.scale_ = np.sqrt(np.where(scaler.var_ > 0.0, scaler.var_, 1.0))
        scaler.n_samples_seen_ = np.int64(state.scaler_seen)
        scaler.n_features_in_ = self._dense
        self._names.update((index, name) for name, index in self._restored_names(state))
        self._copy_weights()

    def _restored_names(self, state: LearnerState) -> list[tuple[str, int]]:
        # Only the shown features' words were saved; their ids are their hashes again.
        return [
            (name, self._id(name)) for name, _ in state.strongest if name not in NUMERIC_FEATURES
        ]

    def _copy_weights(self) -> None:
        coef = self._model.coef_[0]
        self._coef_dense = np.array(coef[: self._dense])
        self._coef_words = np.array(coef[self._dense :])
        self._intercept = float(self._model.intercept_[0])

    def _numeric(self, requests: Sequence[Request]) -> np.ndarray:
        rows = np.zeros((len(requests), self._dense))
        for row, request in enumerate(requests):
            reasons = request.reasons
            values = [reasons.get(name, 0.0) for name in NUMERIC_FEATURES[:-1]]
            values[0] = reasons.get("prior", request.score)
            rows[row, :-1] = values
            rows[row, -1] = request.depth
        return rows

    def _matrix(self, requests: Sequence[Request], dense: np.ndarray) -> sparse.csr_matrix:
        scaled = self._scaler.transform(dense)
        data: list[float] = []
        indices: list[int] = []
        indptr = [0]
        for row, request in enumerate(requests):
            data.extend(float(v) for v in scaled[row])
            indices.extend(range(self._dense))
            ids = self._ids(link_tokens(request.url, request.anchor))
            data.extend([1.0] * len(ids))
            indices.extend(self._dense + i for i in ids)
            indptr.append(len(indices))
        shape = (len(requests), self._dense + self._columns)
        return sparse.csr_matrix((data, indices, indptr), shape=shape)

    def _ids(self, tokens: Sequence[str]) -> list[int]:
        ids = [self._id(token) for token in tokens]
        return sorted(set(ids))

    def _id(self, token: str) -> int:
        cached = self._hashes.get(token)
        if cached is None:
            cached = murmurhash3_32(token, seed=0, positive=True) % self._columns
            if len(self._hashes) < _MAX_NAMES:
                self._hashes[token] = cached
            if len(self._names) < _MAX_NAMES:
                self._names.setdefault(cached, token)
        return cached
