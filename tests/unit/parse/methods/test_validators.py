"""Validators: counts in their written forms, and what they must reject."""

from __future__ import annotations

import pytest

from topicrawl.parse.methods import Invalid, parse_count, validate


@pytest.mark.parametrize(
    ("written", "count"),
    [
        ("1.2万", 12_000),
        ("3.4K", 3_400),
        ("3.4k plays", 3_400),
        ("1,234", 1_234),
        ("12.5 million", 12_500_000),
        ("2.3亿", 230_000_000),
        ("Plays: 987", 987),
        ("1.2万次播放", 12_000),
        ("45 comments", 45),
        ("1 234 567", 1_234_567),
        ("10M+", 10_000_000),
    ],
)
def test_counts_in_their_written_forms(written: str, count: int) -> None:
    assert parse_count(written) == count


@pytest.mark.parametrize(
    "wrong",
    [
        "2021-05-04",
        "12:30",
        "1.2.3K",
        "about a thousand",
        "",
        "3.4",
        "1,23",
        "Director: Ana",
        "5 stars 4",
    ],
)
def test_a_wrong_count_is_rejected(wrong: str) -> None:
    with pytest.raises(Invalid):
        validate("count", wrong)


def test_dates_urls_numbers_and_names() -> None:
    assert validate("date", "2021-05-04T10:00:00Z") == "2021-05-04"
    assert validate("date", "2021年5月4日") == "2021-05-04"
    assert validate("url", "https://x.com/a.mp4") == "https://x.com/a.mp4"
    assert validate("number", "8.5") == 8.5
    assert validate("names", "Ana Lima, Rui Costa / Mei Chen") == [
        "Ana Lima",
        "Rui Costa",
        "Mei Chen",
    ]
    assert validate("names", ["Ana", "Ana", "Rui"]) == ["Ana", "Rui"]
    for kind, bad in [
        ("date", "yesterday"),
        ("url", "/relative/path"),
        ("url", "javascript:alert(1)"),
        ("number", "n/a"),
        ("names", "1234"),
        ("text", "   "),
    ]:
        with pytest.raises(Invalid):
            validate(kind, bad)
