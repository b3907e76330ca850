"""Cleaning, segmentation and clustering of short posts into topics (English and Chinese)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topicrawl.topics import DiscoveredTopic, JiebaTokenizer, TopicDiscoverer, clean_text

ENGLISH = [
    "The new Python release brings faster startup and better error messages",
    "Python developers praise the release of the new version and its error messages",
    "Upgrading to the latest Python release fixed our startup time",
    "Python core team ships a release candidate with clearer error messages",
    "Heavy rain floods the city center and closes the subway stations",
    "Flood warning: rain keeps falling and subway lines are closed downtown",
    "City officials open shelters as flood water rises after days of rain",
    "Subway service suspended because of flood damage from the rain",
    "The football final ends with a late goal and the champions lift the trophy",
    "Fans celebrate the trophy after a dramatic football final goal",
    "Champions win the football final thanks to a goal in extra time",
    "Highlights of the football final: every goal on the road to the trophy",
]

CHINESE = [
    "暴雨导致城市地铁停运，多条线路关闭",
    "持续暴雨，地铁站积水严重，市民出行受阻",
    "气象台发布暴雨红色预警，地铁部分停运",
    "暴雨过后地铁恢复运营，积水逐渐退去",
    "新款手机发布，电池续航和摄像头大幅提升",
    "手机发布会上公布了新款摄像头和电池技术",
    "这款新款手机的摄像头拍照效果很好，电池耐用",
    "手机厂商发布新品，主打摄像头和快充电池",
    "国足世界杯预选赛比赛结果出炉，球迷热议",
    "世界杯预选赛国足比赛输球，球迷失望",
    "球迷关注国足世界杯预选赛下一场比赛",
    "国足在世界杯预选赛比赛中取得进球",
]


@pytest.fixture(scope="module")
def zh_tokenizer() -> JiebaTokenizer:
    return JiebaTokenizer(user_words=["国足"])


def _groups(topics: tuple[DiscoveredTopic, ...]) -> set[tuple[int, ...]]:
    return {topic.members for topic in topics}


def test_cleaning_english_post() -> None:
    post = (
        "<p>Big news from @alice@mastodon.social and @bob: #Python 3.13 is out 🎉🐍 "
        "https://python.org/downloads?x=1 (see www.example.com/notes)</p>"
    )
    assert clean_text(post) == "Big news from and : 3.13 is out (see"


def test_cleaning_chinese_post_keeps_only_han() -> None:
    post = (
        "#北京暴雨# @中国气象局 今天北京暴雨！！[哈哈]😀 详情 http://t.cn/AbC1 "
        "//@路人甲: 注意安全 2024"
    )
    assert clean_text(post) == "今天北京暴雨 详情 注意安全"


def test_chinese_only_can_be_forced_either_way() -> None:
    assert clean_text("iPhone 发布会", chinese_only=False) == "iPhone 发布会"
    assert clean_text("iPhone 发布会") == "发布会"
    assert clean_text("hello world", chinese_only=True) == ""


def test_english_spaces_do_not_form_a_weibo_hashtag() -> None:
    assert clean_text("#rust is fast #speed ok") == "is fast ok"


def test_user_words_stay_whole(zh_tokenizer: JiebaTokenizer) -> None:
    plain = JiebaTokenizer()
    text = "球迷关注国足世界杯预选赛下一场比赛"
    assert "国足" not in plain(text)  # jieba alone cuts it into single characters here
    assert "国足" in zh_tokenizer(text)
    assert "世界杯" in zh_tokenizer(text)


def test_tokenizer_drops_stopwords_short_and_symbol_tokens() -> None:
    tokens = JiebaTokenizer()("The Python release: 3.13 is out, and it is FAST! x 的")
    assert tokens == ["python", "release", "fast"]


def test_english_corpus_gives_three_topics() -> None:
    topics = TopicDiscoverer().discover(ENGLISH)
    assert _groups(topics) == {(0, 1, 2, 3), (4, 5, 6, 7), (8, 9, 10, 11)}
    words = {topic.members[0]: list(topic.words) for topic in topics}
    assert {"python", "release"} <= set(words[0][:3])
    assert {"rain", "flood", "subway"} <= set(words[4])
    assert {"football", "final", "goal"} <= set(words[8][:4])
    for topic in topics:
        weights = list(topic.words.values())
        assert weights == sorted(weights, reverse=True)
        assert all(w > 0.15 for w in weights)


def test_chinese_corpus_gives_three_topics(zh_tokenizer: JiebaTokenizer) -> None:
    topics = TopicDiscoverer(tokenizer=zh_tokenizer).discover(CHINESE)
    assert _groups(topics) == {(0, 1, 2, 3), (4, 5, 6, 7), (8, 9, 10, 11)}
    words = {topic.members[0]: set(topic.words) for topic in topics}
    assert {"暴雨", "地铁"} <= words[0]
    assert {"摄像头", "电池"} <= words[4]
    assert {"世界杯", "预选赛", "国足"} <= words[8]


def test_mixed_languages_and_noise_posts(zh_tokenizer: JiebaTokenizer) -> None:
    texts = [*ENGLISH[:4], *CHINESE[:4], "", "😀😀 @someone http://x.y", "unrelated lonely words"]
    topics = TopicDiscoverer(tokenizer=zh_tokenizer).discover(texts)
    assert _groups(topics) == {(0, 1, 2, 3), (4, 5, 6, 7)}  # noise: no topic, no error


def test_injected_tokenizer_is_used() -> None:
    calls: list[str] = []

    def split_words(text: str) -> list[str]:
        calls.append(text)
        return text.lower().split()

    texts = ["red apple pie", "apple pie recipe", "blue sky today", "sky blue today"]
    topics = TopicDiscoverer(tokenizer=split_words).discover(texts)
    assert calls == texts
    assert _groups(topics) == {(0, 1), (2, 3)}


def test_tiny_inputs() -> None:
    discoverer = TopicDiscoverer(tokenizer=str.split)
    assert discoverer.discover([]) == ()
    assert discoverer.discover(["only one post"]) == ()
    single = TopicDiscoverer(tokenizer=str.split, min_posts=1).discover(["only one post"])
    assert len(single) == 1
    assert single[0].members == (0,)
    assert discoverer.discover(["same words", "same words"])[0].members == (0, 1)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="similarity_threshold"):
        TopicDiscoverer(similarity_threshold=1.0)
    with pytest.raises(ValueError, match="min_posts"):
        TopicDiscoverer(min_posts=0)


HOSTILE_DISCOVERER = TopicDiscoverer(tokenizer=JiebaTokenizer())


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.one_of(st.text(max_size=40), st.sampled_from([*ENGLISH, *CHINESE])), max_size=12)
)
def test_hostile_text_never_breaks_discovery(texts: list[str]) -> None:
    topics = HOSTILE_DISCOVERER.discover(texts)
    seen: set[int] = set()
    for topic in topics:
        assert len(topic.members) >= 2
        assert not seen & set(topic.members)
        seen |= set(topic.members)
        assert all(0 <= m < len(texts) for m in topic.members)
        assert topic.words
        assert all(math.isfinite(w) and w > 0 for w in topic.words.values())
