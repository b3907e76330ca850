"""Charset detection: declarations are checked, wrong ones overruled, nothing ever raises."""

from __future__ import annotations

import codecs

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from topicrawl.fetch import CharsetSource, decode_body, normalize_charset

CHINESE = (
    "<html><head><title>新闻</title></head><body><p>北京时间今天上午，国家统计局发布了最新的"
    "经济数据。数据显示，今年前三个季度，全国居民人均可支配收入继续增长，消费市场稳步恢复。"
    "</p></body></html>"
)


def test_declared_utf8_that_holds_is_used() -> None:
    decoded = decode_body("<p>naïve café</p>".encode(), declared="UTF-8")
    assert decoded.text == "<p>naïve café</p>"
    assert decoded.encoding == "utf-8"
    assert decoded.source is CharsetSource.HEADER


def test_gbk_bytes_declared_utf8_fall_back_to_detection() -> None:
    decoded = decode_body(CHINESE.encode("gbk"), declared="utf-8")
    assert decoded.text == CHINESE
    assert decoded.encoding == "gb18030"
    assert decoded.source is CharsetSource.DETECTED


def test_meta_charset_is_used_when_the_header_is_wrong() -> None:
    page = '<html><head><meta charset="gbk"></head><body>中文网页内容</body></html>'
    decoded = decode_body(page.encode("gbk"), declared="utf-8")
    assert decoded.text == page
    assert decoded.source is CharsetSource.META


def test_http_equiv_meta_is_read() -> None:
    page = (
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=windows-1251">'
        "</head><body>Съешь же ещё этих мягких французских булок</body></html>"
    )
    decoded = decode_body(page.encode("cp1251"))
    assert decoded.text == page
    assert decoded.encoding == "cp1251"
    assert decoded.source is CharsetSource.META


def test_xml_declaration_is_read() -> None:
    page = '<?xml version="1.0" encoding="ISO-8859-7"?><html><body>Ελληνικά</body></html>'
    decoded = decode_body(page.encode("iso8859-7"))
    assert decoded.text == page
    assert decoded.encoding == "iso8859-7"


@pytest.mark.parametrize("label", ["iso-8859-1", "latin1", "windows-1252", "us-ascii"])
def test_utf8_mislabelled_as_single_byte_is_read_as_utf8(label: str) -> None:
    page = f'<meta charset="{label}"><p>Café naïve — 東京 ✓</p>'
    decoded = decode_body(page.encode("utf-8"), declared=label)
    assert decoded.text == page
    assert decoded.encoding == "utf-8"


def test_real_latin1_text_stays_latin1() -> None:
    page = "<p>Le café est très apprécié à Montréal</p>"
    decoded = decode_body(page.encode("latin-1"), declared="iso-8859-1")
    assert decoded.text == page
    assert decoded.encoding == "cp1252"  # what browsers read latin-1 as
    assert decoded.source is CharsetSource.HEADER


def test_undeclared_utf8_and_cp1252() -> None:
    utf8 = decode_body("<p>Grüße — 東京</p>".encode())
    assert utf8.text == "<p>Grüße — 東京</p>"
    assert utf8.source is CharsetSource.UTF8
    french = "<html><body>Le café est très apprécié à Montréal, déjà célèbre.</body></html>"
    western = decode_body(french.encode("cp1252"))
    assert western.text == french
    assert western.source is CharsetSource.DETECTED


@pytest.mark.parametrize(
    ("bom_codec", "bom"),
    [
        ("utf-8", codecs.BOM_UTF8),
        ("utf-16-le", codecs.BOM_UTF16_LE),
        ("utf-16-be", codecs.BOM_UTF16_BE),
        ("utf-32-le", codecs.BOM_UTF32_LE),
    ],
)
def test_bom_wins_over_declarations(bom_codec: str, bom: bytes) -> None:
    page = '<meta charset="iso-8859-1"><p>Köln 東京</p>'
    decoded = decode_body(bom + page.encode(bom_codec), declared="iso-8859-1")
    assert decoded.text == page
    assert decoded.encoding == bom_codec
    assert decoded.source is CharsetSource.BOM


def test_utf16_declared_in_header_without_bom() -> None:
    page = "<html><body>hello</body></html>"
    decoded = decode_body(page.encode("utf-16-le"), declared="utf-16le")
    assert decoded.text == page


def test_meta_claiming_utf16_is_read_as_utf8() -> None:
    page = '<meta charset="utf-16"><p>Ünïcödé</p>'
    decoded = decode_body(page.encode("utf-8"))
    assert decoded.text == page
    assert decoded.encoding == "utf-8"


def test_utf7_declaration_is_ignored() -> None:
    # UTF-7 can smuggle "<script>" past filters as "+ADw-script+AD4-"; browsers refuse it.
    decoded = decode_body(b"+ADw-script+AD4-alert(1)", declared="utf-7")
    assert decoded.text == "+ADw-script+AD4-alert(1)"


@pytest.mark.parametrize(
    ("label", "codec"),
    [
        ("UTF8", "utf-8"),
        (" latin1 ", "cp1252"),
        ('"gb2312"', "gb18030"),
        ("shift_jis", "cp932"),
        ("koi8-r", "koi8-r"),
        ("utf-7", None),
        ("base64", None),
        ("rot13", None),
        ("no-such-charset", None),
        ("", None),
        (None, None),
        ("ütf-8", None),
        ("utf\x00-8", None),
    ],
)
def test_normalize_charset(label: str | None, codec: str | None) -> None:
    assert normalize_charset(label) == codec


def test_undecodable_garbage_is_replaced_not_raised() -> None:
    decoded = decode_body(bytes(range(128, 256)) * 3, declared="utf-8")
    assert isinstance(decoded.text, str)
    assert decoded.text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=st.binary(max_size=3000),
    declared=st.one_of(
        st.none(),
        st.sampled_from(["utf-8", "latin1", "gbk", "utf-16", "utf-7", "base64", "shift_jis"]),
        st.text(max_size=20),
    ),
)
def test_decoding_never_raises(body: bytes, declared: str | None) -> None:
    decoded = decode_body(body, declared=declared)
    assert isinstance(decoded.text, str)
    assert codecs.lookup(decoded.encoding)


@settings(max_examples=100, deadline=None)
@given(text=st.text(alphabet=st.characters(codec="utf-8"), max_size=500))
def test_utf8_text_declared_or_not_round_trips(text: str) -> None:
    assume(not text.startswith("\ufeff"))  # a leading BOM is consumed, by design
    assert decode_body(text.encode(), declared="utf-8").text == text
    assert decode_body(text.encode()).text == text
