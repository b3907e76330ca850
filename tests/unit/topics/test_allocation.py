"""CPU caps and process counts per topic, by hand, and the CPU measurement."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from topicrawl.topics import (
    MIN_CPU_CAP,
    TopicAllocation,
    allocate,
    cpu_caps,
    measure_cpu,
    process_count,
)


def test_caps_by_hand() -> None:
    # 2 cores -> M = 200; others use 40 -> 160 free; heats sum to 6 + 2 = 8
    # (the negative forecast counts as 0).
    caps = cpu_caps({"a": 6.0, "b": 2.0, "c": 0.0, "d": -5.0}, cores=2, used_by_others=40)
    assert caps == {
        "a": pytest.approx(160 * 6 / 8),  # 120
        "b": pytest.approx(160 * 2 / 8),  # 40
        "c": MIN_CPU_CAP,  # a cold topic keeps the 1% floor
        "d": MIN_CPU_CAP,
    }


def test_all_heats_zero_splits_the_free_cpu_equally() -> None:
    assert cpu_caps({1: 0.0, 2: 0.0}, cores=2, used_by_others=40) == {1: 80.0, 2: 80.0}
    assert cpu_caps({1: -3.0, 2: 0.0}, cores=2, used_by_others=40) == {1: 80.0, 2: 80.0}


def test_machine_already_full_leaves_only_the_floor() -> None:
    caps = cpu_caps({"a": 10.0, "b": 1.0}, cores=2, used_by_others=250)  # C_used > M
    assert caps == {"a": 1.0, "b": 1.0}


def test_no_topics_no_caps() -> None:
    assert cpu_caps({}, cores=4, used_by_others=0) == {}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cores": 0, "used_by_others": 0}, "cores"),
        ({"cores": 2, "used_by_others": -1}, "used_by_others"),
        ({"cores": 2, "used_by_others": float("nan")}, "used_by_others"),
    ],
)
def test_bad_machine_figures_are_refused(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        cpu_caps({"a": 1.0}, **kwargs)


def test_nan_heat_is_refused() -> None:
    with pytest.raises(ValueError, match="heat of 'a'"):
        cpu_caps({"a": float("nan")}, cores=2, used_by_others=0)


def test_process_count_clamps() -> None:
    assert process_count(120, per_process_cpu=25, max_processes=8) == 4  # floor(4.8)
    assert process_count(120, per_process_cpu=25, max_processes=3) == 3  # N_max
    assert process_count(1, per_process_cpu=25, max_processes=8) == 1  # never below 1
    assert process_count(0.3, per_process_cpu=0.1, max_processes=8) == 3  # 2.9999999999999996
    with pytest.raises(ValueError, match="per_process_cpu"):
        process_count(10, per_process_cpu=0, max_processes=2)
    with pytest.raises(ValueError, match="max_processes"):
        process_count(10, per_process_cpu=5, max_processes=0)


def test_allocate_by_hand() -> None:
    plan = allocate(
        {"hot": 6.0, "warm": 2.0, "cold": -1.0},
        cores=2,
        used_by_others=40,
        per_process_cpu=25,
        max_processes=4,
    )
    assert plan == {
        "hot": TopicAllocation(heat=6.0, cpu_cap=120.0, processes=4),
        "warm": TopicAllocation(heat=2.0, cpu_cap=40.0, processes=1),
        "cold": TopicAllocation(heat=0.0, cpu_cap=1.0, processes=1),
    }


@given(
    st.dictionaries(st.integers(0, 20), st.floats(-1e9, 1e9), min_size=1, max_size=10),
    st.integers(1, 64),
    st.floats(0, 10_000),
)
def test_caps_share_the_free_cpu(heats: dict[int, float], cores: int, used: float) -> None:
    caps = cpu_caps(heats, cores=cores, used_by_others=used)
    free = max(0.0, cores * 100 - used)
    assert set(caps) == set(heats)
    assert all(math.isfinite(c) and c >= MIN_CPU_CAP for c in caps.values())
    above_floor = [c for c in caps.values() if c > MIN_CPU_CAP]
    assert math.fsum(above_floor) <= free + 1e-6 * max(1.0, free)


def test_a_denormal_heat_gets_no_more_than_the_free_cpu() -> None:
    assert cpu_caps({0: 5e-324}, cores=1, used_by_others=1.25) == {0: 98.75}


def test_measure_cpu_counts_our_busy_child_as_ours() -> None:
    busy = subprocess.Popen(
        [sys.executable, "-c", "import time\nend = time.time() + 3\nwhile time.time() < end: pass"]
    )
    try:
        usage = measure_cpu(window=0.5, own_pids=[os.getpid(), 2**22 + 7919])
    finally:
        busy.kill()
        busy.wait()
    assert usage.capacity == 100.0 * (os.cpu_count() or 1)
    assert 0.0 <= usage.own <= usage.total <= usage.capacity + 1e-6
    assert usage.used_by_others == pytest.approx(usage.total - usage.own)
    assert usage.own > 5.0  # the child spun for the whole window


def test_measure_cpu_window_must_be_positive() -> None:
    with pytest.raises(ValueError, match="window"):
        measure_cpu(window=0)
