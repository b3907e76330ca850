"""Entity names -> accounts: each step, and the false friends none of them may take."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from topicrawl.core.errors import ConfigError
from topicrawl.sources.accounts import MatchStep, match_entities, match_name, normalize_name
from topicrawl.sources.accountsapi import Account


def acct(account_id: str, display: str, username: str = "") -> Account:
    return Account(id=account_id, username=username or f"u{account_id}", display_name=display)


def steps(name: str, *accounts: Account) -> dict[str, MatchStep]:
    return {m.account.display_name: m.step for m in match_name(name, accounts)}


def test_normalize_ignores_case_width_spaces_and_punctuation() -> None:
    assert normalize_name("  Gong-Li ") == normalize_name("gong li") == "gongli"
    assert normalize_name("ＺＨＡＮＧ　Yimou") == "zhangyimou"
    assert normalize_name("《让子弹飞》") == "让子弹飞"


def test_step_1_exact_on_display_name_or_username() -> None:
    assert steps("张艺谋", acct("1", "张艺谋")) == {"张艺谋": MatchStep.EXACT}
    assert steps("Gong Li", acct("2", "GONG·LI")) == {"GONG·LI": MatchStep.EXACT}
    by_username = match_name("Inception", [acct("3", "some fan page", username="inception")])
    assert [m.step for m in by_username] == [MatchStep.EXACT]


def test_step_2_prefix_and_suffix_words() -> None:
    found = match_name(
        "张艺谋",
        [acct("1", "张艺谋导演"), acct("2", "电影张艺谋"), acct("3", "Hero")],
    )
    assert [(m.account.id, m.step) for m in found] == [
        ("1", MatchStep.AFFIX),
        ("2", MatchStep.AFFIX),
    ]
    assert found[0].affix == "导演"
    assert steps("Hero", acct("4", "Hero Official"), acct("5", "The Movie: Hero")) == {
        "Hero Official": MatchStep.AFFIX,
        "The Movie: Hero": MatchStep.AFFIX,
    }
    assert steps("Breaking Bad", acct("6", "Breaking Bad TV Series")) == {
        "Breaking Bad TV Series": MatchStep.AFFIX
    }


def test_step_3_fuzzy_takes_typos_but_not_short_different_names() -> None:
    found = match_name("Christopher Nolan", [acct("1", "Christoper Nolan")])
    assert [m.step for m in found] == [MatchStep.FUZZY]
    assert 88 <= found[0].score < 100
    assert steps("流浪地球", acct("2", "流浪地球2")) == {"流浪地球2": MatchStep.FUZZY}
    # three-character Chinese names one character apart are different people
    assert steps("巩俐", acct("3", "巩丽")) == {}
    assert steps("张艺谋", acct("4", "张艺兴")) == {}


def test_false_friends_are_not_matched() -> None:
    false_friends = [
        acct("1", "张艺谋粉丝团"),  # a fan club: not a listed affix word
        acct("2", "Li Wei Bakery"),
        acct("3", "巩俐小吃店"),
        acct("4", "Nolan Plumbing"),
        acct("5", "Heroes"),  # contains the name but is another word
    ]
    for name in ("张艺谋", "Li Wei", "巩俐", "Christopher Nolan", "Hero"):
        assert match_name(name, false_friends) == [], name


def test_strict_matches_come_first_and_fuzzy_are_bounded() -> None:
    candidates = [acct(str(k), f"Meryl Streep{'p' * k}") for k in range(1, 6)]
    candidates.append(acct("0", "Meryl Streep"))
    found = match_name("Meryl Streep", candidates, max_fuzzy=2)
    assert [m.step for m in found] == [MatchStep.EXACT, MatchStep.FUZZY, MatchStep.FUZZY]
    assert found[1].score >= found[2].score


def test_too_short_names_and_bad_thresholds() -> None:
    assert match_name("A", [acct("1", "A")]) == []
    with pytest.raises(ConfigError):
        match_name("Hero", [], fuzzy_threshold=0)


async def test_match_entities_searches_once_a_name_and_keeps_the_strictest_match() -> None:
    pool = [acct("1", "Gong Li"), acct("2", "Gong Li Film"), acct("3", "Gong Lii")]
    asked: list[str] = []

    async def search(query: str) -> Sequence[Account]:
        asked.append(query)
        return pool

    found = await match_entities(["Gong Li", "gong li", "Gong Li Film"], search)
    assert asked == ["Gong Li", "Gong Li Film"]  # "gong li" is the same name
    by_account = {m.account.id: (m.name, m.step) for m in found}
    assert by_account["1"] == ("Gong Li", MatchStep.EXACT)
    assert by_account["2"] == ("Gong Li Film", MatchStep.EXACT)  # exact beats affix
    assert by_account["3"][1] is MatchStep.FUZZY
