"""Content hashes: pages that differ only in whitespace, case or Unicode form hash equal."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from topicrawl.parse.content import content_hash, content_hash_of_lines, normalise_text


def test_normalise_text() -> None:
    assert normalise_text("  Solar\n\n POWER\t news ") == "solar power news"
    assert normalise_text("ﬁne Ｆｕｌｌ") == "fine full"  # ligature and full-width forms
    assert normalise_text("STRASSE") == normalise_text("straße")
    assert normalise_text("") == ""


def test_whitespace_and_case_variants_hash_equal() -> None:
    page = "Solar power prices fall.\nModule prices fell again."
    variant = "  solar POWER prices fall. module\tprices  fell again.  "
    assert content_hash(page) == content_hash(variant)


def test_composed_and_decomposed_accents_hash_equal() -> None:
    assert content_hash("caf\u00e9") == content_hash("cafe\u0301")


def test_different_texts_hash_differently() -> None:
    assert content_hash("solar power") != content_hash("solar powers")
    assert content_hash("a b") != content_hash("ab")


def test_hash_is_128_bit_hex_and_stable() -> None:
    digest = content_hash("Solar power")
    assert digest == "302a655c9784610a80b8bd6e6da898e6"  # stored hashes must not change
    assert len(content_hash("")) == 32
    int(content_hash("x"), 16)


@given(st.text(), st.sampled_from([" ", "\n", "\t", "  \r\n "]))
def test_hash_ignores_whitespace_layout(text: str, spacing: str) -> None:
    words = text.split()
    assert content_hash(" ".join(words)) == content_hash(spacing.join(words) + spacing)


@given(st.text(alphabet=st.characters(codec=None, categories=None)))
def test_any_text_hashes(text: str) -> None:
    assert len(content_hash(text)) == 32
    assert normalise_text(normalise_text(text)) == normalise_text(text)


@given(st.text(alphabet=st.characters(codec=None, categories=None)))
def test_hash_of_lines_equals_content_hash_on_text_in_lines(text: str) -> None:
    # Any text made into parse_html's form: non-empty lines of single-spaced words.
    lines = "\n".join(filter(None, (" ".join(part.split()) for part in text.split("\x00"))))
    if lines:
        assert content_hash_of_lines(lines) == content_hash(lines)


def test_hash_of_lines_on_the_characters_its_shortcuts_are_about() -> None:
    for lines in ("Straße\nSTRASSE", "A … B\nx™", "ΣΑΣ σας", "\u00b4 acute", "ﬁne Ｆｕｌｌ"):
        assert content_hash_of_lines(lines) == content_hash(lines)
