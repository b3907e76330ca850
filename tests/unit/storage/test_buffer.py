"""The write buffer: one entry per URL in save order, batches taken and put back, hashes."""

from __future__ import annotations

from tests.pages import fetched_page
from topicrawl.core.models import ErrorKind, FetchFailure
from topicrawl.storage.buffer import WriteBuffer
from topicrawl.storage.rows import PendingPage, pending_page


def entry(url: str, content_hash: str | None = None, **changes: object) -> PendingPage:
    page = fetched_page(url, content_hash=content_hash, **changes)
    return pending_page(page, run_id=1, body=None, headers=None)


def urls(taken: list[PendingPage]) -> list[str]:
    return [e.page.url for e in taken]


def test_a_url_saved_again_keeps_its_place_and_takes_the_new_page() -> None:
    buffer = WriteBuffer()
    for url in ("a", "b", "c"):
        buffer.add_page(entry(url))
    buffer.add_page(entry("b", title="newer"))

    taken, _ = buffer.take(10)

    assert urls(taken) == ["a", "b", "c"]
    assert taken[1].page.title == "newer"
    assert not buffer


def test_batches_are_taken_oldest_first() -> None:
    buffer = WriteBuffer()
    for n in range(5):
        buffer.add_page(entry(str(n)))
        buffer.add_failure(FetchFailure(str(n), ErrorKind.DNS, "x", 0.0), 1)

    pages, failures = buffer.take(2)

    assert urls(pages) == ["0", "1"]
    assert [f.url for f, _ in failures] == ["0", "1"]
    assert (buffer.page_count, buffer.failure_count) == (3, 3)


def test_a_restored_batch_goes_back_in_front_and_newer_saves_win() -> None:
    buffer = WriteBuffer()
    for url in ("a", "b", "c"):
        buffer.add_page(entry(url))
    buffer.add_failure(FetchFailure("f1", ErrorKind.DNS, "x", 0.0), 1)
    taken, failures = buffer.take(2)
    buffer.add_page(entry("b", title="saved while a/b were being written"))
    buffer.add_failure(FetchFailure("f2", ErrorKind.DNS, "x", 0.0), 1)

    buffer.restore(taken, failures)
    again, again_failures = buffer.take(10)

    assert urls(again) == ["a", "c", "b"]
    assert again[2].page.title == "saved while a/b were being written"
    assert [f.url for f, _ in again_failures] == ["f1", "f2"]


def test_hashes_are_answered_until_their_batch_is_committed() -> None:
    buffer = WriteBuffer()
    buffer.add_page(entry("a", "h"))
    buffer.add_page(entry("b", "h", duplicate_of="a"))
    buffer.add_page(entry("c", "other"))

    taken, _ = buffer.take(2)
    assert buffer.hash_holder("h") == "a"

    buffer.committed(taken)
    assert buffer.hash_holder("h") is None
    assert buffer.hash_holder("other") == "c"


def test_a_hash_stays_while_any_uncommitted_page_has_it() -> None:
    buffer = WriteBuffer()
    buffer.add_page(entry("a", "h"))
    taken, _ = buffer.take(1)
    buffer.add_page(entry("b", "h", duplicate_of="a"))

    buffer.committed(taken)

    assert buffer.hash_holder("h") == "a"


def test_replacing_a_page_forgets_its_old_hash() -> None:
    buffer = WriteBuffer()
    buffer.add_page(entry("a", "old"))
    buffer.add_page(entry("a", "new"))

    assert buffer.hash_holder("old") is None
    assert buffer.hash_holder("new") == "a"


def test_a_duplicate_points_at_its_original() -> None:
    buffer = WriteBuffer()
    buffer.add_page(entry("copy", "h", duplicate_of="original"))
    assert buffer.hash_holder("h") == "original"
