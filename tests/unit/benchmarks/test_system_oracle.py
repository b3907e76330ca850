"""The system benchmark's oracle: with a page's change times known, a fetch at a change keeps
the page fresh until the next one, and a budget goes to the changes that stay fresh longest
(weighted by plays, or not); scored by the same function as the policies that are run."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks" / "revisit"))

from system import oracle, score, window_visits


@dataclass(frozen=True)
class _Truth:
    fields: dict[str, Any]


class _Site:
    """Pages whose plays step up at given days; one page never changes."""

    def __init__(self, changes: dict[str, tuple[list[float], int]]) -> None:
        self.changes = changes  # path -> (days its counts change, plays a change adds)

    def truth_at(self, path: str, day: float) -> _Truth:
        days, step = self.changes[path]
        plays = 10 + step * sum(1 for d in days if d <= day + 1e-9)
        return _Truth({"plays": plays, "comments": 0, "favourites": 0})


SITE = _Site(
    {
        "/a": ([1.0, 1.5, 1.7], 10),  # fresh spans in [1, 2]: 0.5, 0.2, 0.3 days
        "/b": ([1.2], 1000),  # popular: one change, fresh 0.8 days after it
        "/still": ([], 0),
    }
)
WINDOW = (1.0, 2.0)
STEP = 0.1
PAGES = ["/a", "/b", "/still"]


def _oracle(budget: int, *, weighted: bool) -> dict[str, list[float]]:
    return oracle(SITE, PAGES, budget, window=WINDOW, step=STEP, weighted=weighted)  # type: ignore[arg-type]


def test_each_fetch_is_at_a_change_and_the_longest_fresh_spans_win() -> None:
    plain = _oracle(2, weighted=False)
    assert plain["/b"] == pytest.approx([0.0, 1.2])  # 9 fresh grid points
    assert plain["/a"] == pytest.approx([0.0, 1.0])  # 5; /a's others give 2 and 4
    assert plain["/still"] == [0.0]
    assert window_visits(SITE, plain, window=WINDOW) == 2  # type: ignore[arg-type]
    # Weighted by plays, a fetch of the popular page is worth more than any of /a's.
    weighted = _oracle(2, weighted=True)
    assert weighted["/b"] == pytest.approx([0.0, 1.2])
    assert weighted["/a"] == pytest.approx([0.0, 1.7])  # 4 points at 40 plays beat 5 at 20


def test_the_oracle_is_scored_like_any_policy_and_beats_a_blind_schedule() -> None:
    budget = 3
    known = _oracle(budget, weighted=False)
    blind = {"/a": [0.0, 1.05, 1.55], "/b": [0.0, 1.1], "/still": [0.0]}
    fresh_known = score(SITE, known, window=WINDOW, step=STEP)[0]  # type: ignore[arg-type]
    fresh_blind = score(SITE, blind, window=WINDOW, step=STEP)[0]  # type: ignore[arg-type]
    # /a: fresh 1.0-1.4 (5 points) and 1.7-2.0 (4); /b: all 11 (its day-0 copy is fresh
    # until its change at 1.2, fetched then); of 2 x 11 points (/still is not scored).
    assert fresh_known == pytest.approx(20 / 22)
    assert fresh_blind < fresh_known
    # More budget than changes: every change fetched, fresh throughout.
    assert score(SITE, _oracle(10, weighted=True), window=WINDOW, step=STEP)[0] == 1.0  # type: ignore[arg-type]
