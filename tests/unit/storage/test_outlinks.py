"""Packed links: any links come back exactly, shared block texts are stored once, damage is
reported."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from topicrawl.core.errors import StorageError
from topicrawl.core.models import Link
from topicrawl.storage.outlinks import decode_links, encode_links
from topicrawl.storage.storable import clean

any_text = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=40)
storable_text = st.text(
    alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=40
)


def links_of(text: st.SearchStrategy[str]) -> st.SearchStrategy[list[Link]]:
    return st.lists(
        st.builds(
            Link,
            url=text,
            anchor=text,
            block=st.integers(0, 2**40),
            block_text=text,
            nofollow=st.booleans(),
        ),
        max_size=30,
    )


def storable(link: Link) -> Link:
    return Link(
        clean(link.url), clean(link.anchor), link.block, clean(link.block_text), link.nofollow
    )


@given(links_of(storable_text))
def test_storable_links_come_back_exactly(links: list[Link]) -> None:
    assert decode_links(encode_links(links)) == tuple(links)


@given(links_of(any_text))
def test_hostile_links_come_back_as_storable_strings(links: list[Link]) -> None:
    assert decode_links(encode_links(links)) == tuple(storable(link) for link in links)


def test_no_links_is_no_value() -> None:
    assert encode_links([]) is None
    assert decode_links(None) == ()


def test_a_block_text_shared_by_many_links_is_stored_once() -> None:
    block_text = "navigation " * 1000
    links = [Link(f"https://h/{n}", f"a{n}", 7, block_text) for n in range(100)]

    packed = encode_links(links)

    assert packed is not None
    assert len(packed) < len(block_text) + 2000
    assert decode_links(packed) == tuple(links)


def test_one_block_number_with_different_texts_keeps_each_text() -> None:
    links = [
        Link("https://h/1", "one", 3, "first text"),
        Link("https://h/2", "two", 3, "second text", nofollow=True),
        Link("https://h/3", "three", 3, "first text"),
        Link("https://h/4", "four", 0, "first text"),
    ]

    assert decode_links(encode_links(links)) == tuple(links)


def test_a_huge_link_list_is_compressed_and_comes_back() -> None:
    links = [
        Link(f"https://h/{n}", f"anchor {n}", n // 50, f"block {n // 50} " * 500)
        for n in range(3000)
    ]

    packed = encode_links(links)

    assert packed is not None
    assert packed[:1] == b"z"
    assert decode_links(packed) == tuple(links)


@pytest.mark.parametrize(
    "damaged",
    [
        b"",
        b"q1\x000\x000\x000",
        b"z" + b"not zlib",
        b"p\xff\xfe",
        b"p2\x000\x000\x000",
        b"p1\x002\x001\x000\x000\x00t\x000",
        b"p1\x001\x001\x000\x000\x00t\x005\x00https://h/\x00a",
        b"p1\x001\x001\x001\x009\x000\x00t\x000\x00https://h/\x00a",
        b"p1\x00x\x001\x000",
        b"z" + zlib.compress(b"1\x001\x001\x000\x000\x00t\x000\x00u"),
    ],
)
def test_a_damaged_value_is_an_error(damaged: bytes) -> None:
    with pytest.raises(StorageError, match="links are damaged"):
        decode_links(damaged)


def test_a_link_of_the_wrong_type_is_refused() -> None:
    with pytest.raises((TypeError, ValueError)):
        encode_links([Link("https://h/", "a", block="not a number")])  # type: ignore[arg-type]
