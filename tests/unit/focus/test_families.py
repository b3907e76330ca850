from __future__ import annotations

import pytest

from topicrawl.core.models import Request
from topicrawl.focus.families import (
    UrlDirectories,
    UrlFamilies,
    WaitingLinks,
    directory_of,
    family_of,
)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://H/lib/asyncio-task.html", "h/lib/asyncio"),
        ("http://h/lib/asyncio.html?x=1", "h/lib/asyncio"),
        ("http://h/lib/xml.dom.minidom.html", "h/lib/xml"),
        ("http://h/lib/_thread.html", "h/lib/thread"),
        ("http://h/api/java/sql/Connection.html", "h/api/java/sql/connection"),
        ("http://h/cooking/1022.html", "h/cooking/#"),
        ("http://h/news/2024-05-12-title.html", "h/news/#"),
        ("http://h/cooking/v2-menu.html", "h/cooking/v2"),
        ("http://h/lib/", ""),
        ("http://h", ""),
    ],
)
def test_a_urls_family_is_its_directory_and_the_first_word_of_its_file_name(
    url: str, expected: str
) -> None:
    assert family_of(url) == expected


def test_numbered_pages_of_a_directory_are_one_family() -> None:
    families = UrlFamilies(prior=1.0)
    families.observe("http://h/cooking/1022.html", 0.6)
    families.observe("http://h/cooking/how-to-boil.html", 0.0)
    # Crawl mean 0.3; family "#": (0.6 - 0.3) / 2 = 0.15, over the best 0.6.
    assert families.score("http://h/cooking/1054.html") == pytest.approx(0.25)
    assert families.score("http://h/football/1054.html") == 0.0


def test_a_familys_yield_is_its_shrunk_lift_over_the_crawls_mean() -> None:
    families = UrlFamilies(prior=1.0)
    assert families.score("http://h/lib/asyncio-task.html") == 0.0  # nothing crawled
    families.observe("http://h/lib/asyncio.html", 0.8)
    families.observe("http://h/lib/os.html", 0.0)
    families.observe("http://h/index.html", 0.1)
    # Crawl mean 0.3; family "asyncio": (0.8 - 1 * 0.3) / (1 + 1) = 0.25, over the best 0.8.
    assert families.score("http://h/lib/asyncio-task.html") == pytest.approx(0.25 / 0.8)
    # Family "os" is under the crawl's mean: 0.
    assert families.score("http://h/lib/os.path.html") == 0.0
    assert families.score("http://h/other/asyncio.html") == 0.0  # another directory
    families.observe("http://h/lib/asyncio-stream.html", 0.4)
    # Mean 0.325; (1.2 - 2 * 0.325) / (2 + 1) = 0.18333, over 0.8.
    assert families.score("http://h/lib/asyncio-task.html") == pytest.approx(0.55 / 3 / 0.8)


def test_families_past_capacity_are_not_counted() -> None:
    families = UrlFamilies(prior=1.0, capacity=1)
    families.observe("http://h/a.html", 0.5)
    families.observe("http://h/b.html", 0.5)
    families.observe("http://h/c.html", 0.0)
    assert families.score("http://h/a-x.html") > 0.0
    assert families.score("http://h/b-x.html") == 0.0


def test_waiting_links_keep_their_best_score_until_crawled() -> None:
    waiting = WaitingLinks(capacity=2)
    waiting.wait(Request(url="http://h/a", score=0.3, depth=1))
    waiting.wait(Request(url="http://h/a", score=0.1, depth=1))
    waiting.wait(Request(url="http://h/b", score=0.2, depth=1))
    waiting.wait(Request(url="http://h/c", score=0.9, depth=1))  # over capacity
    assert [(r.url, r.score) for r in waiting] == [("http://h/a", 0.3), ("http://h/b", 0.2)]
    waiting.crawled("http://h/a")
    waiting.crawled("http://h/unknown")
    assert [r.url for r in waiting] == ["http://h/b"]
    assert len(waiting) == 1


@pytest.mark.parametrize(
    "make", [lambda: UrlFamilies(prior=0.0), lambda: WaitingLinks(capacity=-1)]
)
def test_bad_settings_are_refused(make: object) -> None:
    with pytest.raises(ValueError, match="must be"):
        make()  # type: ignore[operator]


def test_directory_of() -> None:
    assert directory_of("http://H/lib/os.html") == "h/lib/"
    assert directory_of("http://h/") == "h/"
    assert directory_of("http://h") == "h/"
    assert directory_of("http://[::1") == ""


def test_url_directories_scale_by_the_shrunk_mean_over_the_crawls() -> None:
    directories = UrlDirectories(prior=2.0)
    assert directories.factor("http://h/a/x.html") == 1.0  # nothing crawled yet
    for url, similarity in (("http://h/a/1", 0.1), ("http://h/a/2", 0.1), ("http://h/b/1", 0.7)):
        directories.observe(url, similarity)
    # Crawl mean 0.3; h/a/: (0.2 + 2 * 0.3) / (2 + 2) = 0.2, over the mean: 2/3.
    assert directories.factor("http://h/a/new.html") == pytest.approx(2 / 3)
    assert directories.factor("http://h/b/new.html") == 1.0  # above average: capped
    assert directories.factor("http://h/c/new.html") == 1.0  # no page crawled there
    with pytest.raises(ValueError, match="prior"):
        UrlDirectories(prior=0.0)


def test_url_directories_stop_counting_new_ones_at_capacity() -> None:
    directories = UrlDirectories(prior=1.0, capacity=1)
    directories.observe("http://h/a/1", 0.0)
    directories.observe("http://h/b/1", 0.0)  # not counted: full
    directories.observe("http://h/c/1", 1.0)
    assert directories.factor("http://h/a/x") == pytest.approx((0 + 1 / 3) / 2 / (1 / 3))
    assert directories.factor("http://h/b/x") == 1.0


def test_remembered_url_groups_are_the_computed_ones_and_long_urls_are_not_kept() -> None:
    from topicrawl.focus import families  # noqa: PLC0415 - its private caches are under test

    urls = [
        "http://H/lib/asyncio-task.html",
        "http://h/cooking/1022.html",
        "http://h/",
        "http://[::1/x.html",  # cannot be split
        "http://h/" + "a/" * 300 + "Page.html",  # longer than URL_MEMO_CHARS
    ]
    for group, compute in (
        (families.family_of, families._family_of.__wrapped__),
        (families.directory_of, families._directory_of.__wrapped__),
    ):
        assert [group(url) for url in urls] == [compute(url) for url in urls]
        assert [group(url) for url in urls] == [compute(url) for url in urls]  # remembered
    kept = families._family_of.cache_info().currsize
    family_of("http://h/" + "b/" * 300 + "Other.html")
    assert families._family_of.cache_info().currsize == kept
    family_of("http://h/b/Other.html")
    assert families._family_of.cache_info().currsize == min(kept + 1, families.URL_MEMO)
