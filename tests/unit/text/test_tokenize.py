from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from topicrawl.text import Tokenizer, chinese_segmenter, light_stem, normalize_text


def test_english_tokens_are_lowercase_words_without_stopwords() -> None:
    tokens = Tokenizer(stem=False).tokens("The Web Crawler, and its FRONTIER-queue!")
    assert tokens == ["web", "crawler", "frontier", "queue"]


def test_plurals_fold_so_query_and_page_forms_match() -> None:
    tokens = Tokenizer().tokens("crawlers queries classes searches pages caches analysis")
    assert tokens == ["crawler", "query", "class", "search", "page", "cache", "analysis"]


def test_light_stem_leaves_short_and_non_ascii_words() -> None:
    assert light_stem("bus") == "bus"
    assert light_stem("corpus") == "corpus"
    assert light_stem("straßes") == "straßes"
    assert light_stem("policies") == "policy"


def test_numbers_single_letters_and_huge_tokens_are_dropped() -> None:
    junk = "x" * 41
    assert Tokenizer().tokens(f"a 2024 b 42 crawler {junk}") == ["crawler"]
    assert Tokenizer(keep_numbers=True).tokens("version 2024") == ["version", "2024"]


def test_full_width_forms_are_normalised() -> None:
    assert Tokenizer().tokens("ＷＥＢ　Ｃｒａｗｌｅｒ") == ["web", "crawler"]
    assert normalize_text("ＡＢＣ１２３") == "abc123"


def test_chinese_is_segmented_and_function_words_dropped() -> None:
    tokens = Tokenizer().tokens("我们在研究网络爬虫的方法。")
    assert "我们" not in tokens
    assert "的" not in tokens
    assert "在" not in tokens
    assert "研究" in tokens
    assert "方法" in tokens


def test_user_dictionary_keeps_words_whole() -> None:
    text = "他们在研究机器学习和自然语言处理"
    plain = Tokenizer().tokens(text)
    assert "机器学习" not in plain  # jieba alone splits it into 机器 / 学习
    tokens = Tokenizer(user_words=["机器学习", "自然语言处理"]).tokens(text)
    assert "机器学习" in tokens
    assert "自然语言处理" in tokens
    assert "机器" not in tokens


def test_user_words_match_case_insensitively_and_are_exempt_from_filters() -> None:
    tokenizer = Tokenizer(user_words=["C++", "The Who", "5G"])
    assert tokenizer.tokens("I love c++ and THE WHO on 5G") == ["love", "c++", "the who", "5g"]


def test_user_words_do_not_match_inside_other_words() -> None:
    tokenizer = Tokenizer(user_words=["go"])
    assert tokenizer.tokens("google go golang") == ["google", "go", "golang"]


def test_overlapping_user_words_take_the_longest_leftmost() -> None:
    tokenizer = Tokenizer(user_words=["北京", "北京大学", "大学生"])
    assert tokenizer.tokens("北京大学生")[0] == "北京大学"


def test_mixed_language_text() -> None:
    tokens = Tokenizer(user_words=["网络爬虫"]).tokens("Scrapy是一个网络爬虫framework")
    assert tokens[0] == "scrapy"
    assert "网络爬虫" in tokens
    assert tokens[-1] == "framework"


def test_extra_stopwords_and_stopwords_off() -> None:
    assert Tokenizer(extra_stopwords=["Crawler"]).tokens("crawler spider") == ["spider"]
    assert Tokenizer(drop_stopwords=False, stem=False).tokens("the web") == ["the", "web"]


def test_jieba_is_loaded_once_per_process() -> None:
    assert chinese_segmenter() is chinese_segmenter()


@given(st.text(max_size=300))
def test_any_text_gives_clean_tokens(text: str) -> None:
    tokens = Tokenizer(user_words=["机器学习", "c++"]).tokens(text)
    for token in tokens:
        assert token
        assert token == normalize_text(token)
        assert not any(ch.isspace() for ch in token)
        assert len(token) <= 40
