"""What a focused crawl has learned (topic vector history, threshold and precision history),
as a value that storage keeps and a resumed crawl restores. Pure: JSON in, JSON out."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from topicrawl.core.errors import ConfigError
from topicrawl.focus.learner import LearnerState
from topicrawl.focus.relevance import TopicSnapshot

__all__ = ["LearnedState", "TopicHistory"]

_MAX_STATE_CHARS = 5_000_000  # a saved state is small; a huge one is not ours


@dataclass(frozen=True, slots=True)
class TopicHistory:
    """One topic's name and every value its vector had, oldest first."""

    topic: str
    snapshots: tuple[TopicSnapshot, ...]


@dataclass(frozen=True, slots=True)
class LearnedState:
    """A focused crawl's learned state.

    ``pages`` counts the (non-duplicate) pages the strategy has learned from; ``threshold`` is
    the current relevance threshold; ``thresholds`` its values as ``(pages, value)`` each time
    it moved; ``precisions`` every sampled precision, oldest first; ``learner`` the online
    link learner (None when off); ``promoted`` the pages promoted to seeds of the next session
    (URL, importance), best first; ``seeded`` those of the last session this one was seeded
    with.
    """

    pages: int
    threshold: float
    thresholds: tuple[tuple[int, float], ...]
    precisions: tuple[float, ...]
    topics: tuple[TopicHistory, ...]
    learner: LearnerState | None = None
    promoted: tuple[tuple[str, float], ...] = ()
    seeded: tuple[str, ...] = ()

    def to_json(self) -> str:
        """The state as a JSON document."""
        return json.dumps(
            {
                "pages": self.pages,
                "threshold": self.threshold,
                "thresholds": [list(item) for item in self.thresholds],
                "precisions": list(self.precisions),
                "topics": [
                    {
                        "topic": t.topic,
                        "snapshots": [
                            {
                                "pages": s.pages,
                                "threshold": s.threshold,
                                "weights": [[term, weight] for term, weight in s.weights],
                            }
                            for s in t.snapshots
                        ],
                    }
                    for t in self.topics
                ],
                "learner": None if self.learner is None else self.learner.to_dict(),
                "promoted": [list(item) for item in self.promoted],
                "seeded": list(self.seeded),
            },
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text: str) -> LearnedState:
        """Read a state written by :meth:`to_json`.

        Raises:
            ConfigError: the text is not such a state.
        """
        if len(text) > _MAX_STATE_CHARS:
            raise ConfigError("the saved focused-crawl state is too large to be one")
        try:
            data = json.loads(text)
            topics = tuple(
                TopicHistory(
                    topic=str(t["topic"]),
                    snapshots=tuple(
                        TopicSnapshot(
                            int(s["pages"]),
                            tuple((str(term), _finite(w)) for term, w in s["weights"]),
                            None if s["threshold"] is None else _finite(s["threshold"]),
                        )
                        for s in t["snapshots"]
                    ),
                )
                for t in data["topics"]
            )
            return cls(
                pages=int(data["pages"]),
                threshold=_finite(data["threshold"]),
                thresholds=tuple((int(p), _finite(v)) for p, v in data["thresholds"]),
                precisions=tuple(_finite(p) for p in data["precisions"]),
                topics=topics,
                # States saved before issue 18 have neither.
                learner=None
                if data.get("learner") is None
                else LearnerState.from_dict(data["learner"]),
                promoted=tuple((str(u), _finite(v)) for u, v in data.get("promoted", ())),
                seeded=tuple(str(u) for u in data.get("seeded", ())),
            )
        except (ValueError, TypeError, KeyError) as exc:
            raise ConfigError(f"the saved focused-crawl state is not readable: {exc}") from exc

    def topic_names(self) -> Sequence[str]:
        return [t.topic for t in self.topics]


def _finite(value: object) -> float:
    number = float(value)  # type: ignore[arg-type]
    if not math.isfinite(number):
        raise ValueError(f"{value!r} is not a finite number")
    return number
