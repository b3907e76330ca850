"""The scale web's generator: deterministic, and its link structure has the stated degrees."""

from __future__ import annotations

import re
import statistics

import pytest

from topicrawl.demoweb.scaleweb import ScaleWeb

SAMPLE = [(host, page) for host in range(0, 1000, 7) for page in (0, 1, 5, 40, 333, 9_999_999)]


@pytest.fixture(scope="module")
def web() -> ScaleWeb:
    return ScaleWeb(seed=3, hosts=1000, port=8480)


def test_the_same_url_gives_the_same_page_in_another_generator(web: ScaleWeb) -> None:
    again = ScaleWeb(seed=3, hosts=1000, port=8480)
    for host, page in SAMPLE[:60]:
        assert web.page(host, page) == again.page(host, page)


def test_another_seed_gives_other_pages(web: ScaleWeb) -> None:
    other = ScaleWeb(seed=4, hosts=1000, port=8480)
    differ = sum(web.page(h, p).body != other.page(h, p).body for h, p in SAMPLE[:60])
    assert differ == 60


def test_degrees_sizes_and_cross_host_share_are_as_stated(web: ScaleWeb) -> None:
    degrees, cross, sizes = [], 0, []
    for host, page in SAMPLE:
        made = web.page(host, page)
        degrees.append(len(made.links))
        own = web.address(host)
        cross += sum(f"//{own}:" not in link for link in made.links)
        sizes.append(len(made.body))
    assert min(degrees) >= 20
    assert max(degrees) <= 60
    assert 37 <= statistics.mean(degrees) <= 43  # uniform over 20..60
    assert 0.12 <= cross / sum(degrees) <= 0.18  # cross_host_share 0.15
    assert min(sizes) >= 5_000
    assert max(sizes) <= 50_000
    # log-uniform over 5-50 KB: the median is near sqrt(5 * 50) = 15.8 KB
    assert 12_000 <= statistics.median(sizes) <= 20_000


def test_a_page_body_links_exactly_its_listed_links(web: ScaleWeb) -> None:
    made = web.page(12, 345)
    hrefs = re.findall(rb'href="([^"]+)"', made.body)
    assert [h.decode() for h in hrefs] == list(made.links)
    assert made.body.startswith(b"<!DOCTYPE html>")
    assert made.body.endswith(b"</html>")
    made.body.decode("utf-8")  # whole characters even where a paragraph was cut


def test_links_reach_new_pages_so_the_web_has_no_end(web: ScaleWeb) -> None:
    targets = {p for h, p, _ in web.link_targets(5, 1000) if h == 5}
    assert max(targets) > 1000


def test_other_hosts_are_linked_with_a_skewed_in_degree(web: ScaleWeb) -> None:
    linked: dict[int, int] = {}
    for host in range(1000):
        for other, _, _ in web.link_targets(host, 3):
            if other != host:
                linked[other] = linked.get(other, 0) + 1
    top = sorted(linked.values(), reverse=True)
    assert len(linked) > 300  # many hosts are reached
    assert top[0] > 10 * statistics.median(top)  # a few are popular


def test_robots_txt_forbids_the_private_links_it_lists(web: ScaleWeb) -> None:
    assert b"Disallow: /private/" in web.robots_txt(7)
    assert web.disallowed(7, "/private/4.html")
    assert not web.disallowed(7, "/p/4.html")
    assert web.disallowed(13, "/p/130.html")
    assert not web.disallowed(12, "/p/130.html")
    links = [u for h in range(40) for u in web.page(h, 9).links]
    private = [u for u in links if "/private/" in u]
    assert 0 < len(private) < len(links) / 10  # about one link in forty


def test_english_and_chinese_hosts(web: ScaleWeb) -> None:
    langs = [web.host_topic(h)[1] for h in range(1000)]
    assert 0.2 <= langs.count("zh") / len(langs) <= 0.4
    zh_host = langs.index("zh")
    text = web.page(zh_host, 2).body.decode()
    assert re.search(r"[\u4e00-\u9fff]{20}", text)


@pytest.mark.parametrize(
    "options",
    [
        {"hosts": 0},
        {"min_links": 30, "max_links": 20},
        {"cross_host_share": 1.5},
        {"min_bytes": 60_000},
        {"base_address": "127.255.255.250", "hosts": 10},
        {"base_address": "10.0.0.1"},
    ],
)
def test_bad_settings_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"\w"):
        ScaleWeb(**options)  # type: ignore[arg-type]


def test_a_page_number_out_of_range_is_refused(web: ScaleWeb) -> None:
    with pytest.raises(ValueError, match="page must be"):
        web.page(1, -1)
    with pytest.raises(ValueError, match="not a host"):
        web.host_index("127.9.0.1")
