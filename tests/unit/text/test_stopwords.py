from __future__ import annotations

import pytest

from topicrawl.core.errors import ConfigError
from topicrawl.text import all_stopwords, stopwords


def test_chinese_list_covers_common_function_words() -> None:
    zh = stopwords("zh")
    for word in [
        "的",
        "了",
        "在",
        "是",
        "和",
        "也",
        "就",
        "都",
        "而",
        "及",
        "与",
        "着",
        "或",
        "一个",
        "没有",
        "我们",
        "你们",
        "他们",
    ]:
        assert word in zh


def test_english_list_has_function_words_but_not_content_words() -> None:
    en = stopwords("en")
    assert {"the", "and", "of", "which", "would"} <= en
    assert not {"crawler", "web", "topic", "search"} & en


def test_comment_lines_are_not_words() -> None:
    assert not any(word.startswith("#") for word in all_stopwords())
    assert all(word == word.strip() and word for word in all_stopwords())


def test_union_holds_both_languages() -> None:
    assert stopwords("en") | stopwords("zh") == all_stopwords()


def test_unknown_language_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="fr"):
        stopwords("fr")
