"""Priority keys: integer order is score order, then insertion order."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from topicrawl.frontier._schedule import fp_of, make_key, score_of, seq_of

SCORES = st.floats(allow_nan=False)
SEQS = st.integers(min_value=0, max_value=(1 << 48) - 1)
FPS = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)


@given(SCORES, SEQS, FPS)
def test_a_key_holds_its_parts(score: float, seq: int, fp: int) -> None:
    key = make_key(score, seq, fp)
    assert fp_of(key) == fp
    assert seq_of(key) == seq
    assert score_of(key) == score
    assert math.copysign(1.0, score_of(key)) == math.copysign(1.0, score + 0.0)


@given(SCORES, SEQS, FPS, SCORES, SEQS, FPS)
def test_smaller_key_means_higher_score_then_earlier(
    s1: float, q1: int, f1: int, s2: float, q2: int, f2: int
) -> None:
    k1, k2 = make_key(s1, q1, f1), make_key(s2, q2, f2)
    if s1 != s2:
        assert (k1 < k2) == (s1 > s2)
    elif q1 != q2:
        assert (k1 < k2) == (q1 < q2)


def test_minus_zero_ties_with_zero() -> None:
    assert make_key(-0.0, 1, 5) < make_key(0.0, 2, 5) < make_key(-0.0, 3, 5)
