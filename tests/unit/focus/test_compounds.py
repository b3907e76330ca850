"""The keywords' words found inside glued-together words (``compound_words``)."""

from __future__ import annotations

import pytest

from topicrawl.focus.compounds import CompoundWords


def test_finds_the_keyword_words_inside_longer_words() -> None:
    words = CompoundWords(["Subversion", "CVS", "import, export", "e-mail"], min_length=3)
    assert words.words == ("subversion", "cvs", "import", "export", "mail")
    assert words.expand("git-cvsimport(1)") == "git-cvsimport(1) cvs import"
    # Each word once, in the order found; the text itself is kept as it was.
    expanded = words.expand("CVSExportCommit cvsimport")
    assert expanded == "CVSExportCommit cvsimport cvs export import"


def test_leaves_exact_and_inflected_words_alone() -> None:
    words = CompoundWords(["import", "lock"], min_length=3)
    # The tokenizer already sees these: nothing is added.
    assert words.expand("import imports locking locked") == "import imports locking locked"
    # A word glued to something that is not an inflection is a compound.
    assert words.expand("lockingv3 reimport") == "lockingv3 reimport lock import"


def test_min_length_and_off() -> None:
    assert CompoundWords(["CVS", "journal"], min_length=4).expand("cvsjournal") == (
        "cvsjournal journal"
    )
    off = CompoundWords(["CVS"], min_length=0)
    assert not off
    assert off.expand("cvsimport") == "cvsimport"
    # Chinese keywords have no Latin words: the tokenizer segments Chinese already.
    assert not CompoundWords(["虚拟主机"], min_length=1)
    with pytest.raises(ValueError, match="min_length"):
        CompoundWords(["CVS"], min_length=-1)


def test_digits_alone_are_not_words_to_find() -> None:
    words = CompoundWords(["http 2", "SQL"], min_length=1)
    assert words.words == ("http", "sql")
    assert words.expand("http2 mysql") == "http2 mysql http sql"
