"""The SearXNG client against the demo web's SearXNG-compatible endpoint: its engines
disagree, their results are fused; 429, 5xx, 403 and malformed answers are clear errors."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from topicrawl.core.errors import BlockedError, PermanentFetchError, RetryableFetchError
from topicrawl.core.models import ErrorKind
from topicrawl.demoweb import DemoWeb, DemoWebServer
from topicrawl.demoweb.metasearch import ENGINES, DemoSearch, SearchServer
from topicrawl.sources.metasearch import MalformedSearchAnswer, SearxClient


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoWebServer]:
    with DemoWebServer(DemoWeb.generate(seed=3, hosts=4, pages_per_host=20)).run_in_thread() as d:
        yield d


def test_the_demo_engines_disagree(demo: DemoWebServer) -> None:
    search = DemoSearch(demo.web)
    tops = {
        name: [d.url for d in search.engine(name, "astronomy telescope")[:10]] for name in ENGINES
    }
    assert all(tops.values())
    assert len({tuple(t) for t in tops.values()}) == 3
    # Each engine skips some hosts: none sees every host.
    hosts = {name: {d.url.split("/")[2] for d in search.engine(name, "the")} for name in ENGINES}
    assert all(len(h) < 4 for h in hosts.values())


async def test_seeds_are_fused_across_engines_and_mostly_on_topic(demo: DemoWebServer) -> None:
    with SearchServer(demo.web).run_in_thread() as server:
        async with SearxClient(server.base_url) as client:
            seeds = await client.seeds("astronomy telescope", limit=10, pages=2)
    assert len(seeds) == 10
    assert [s.score for s in seeds] == sorted((s.score for s in seeds), reverse=True)
    assert len(seeds[0].engines) >= 2  # the top is where engines agree
    on_topic = [demo.web.true_topic(s.url) == "astronomy" for s in seeds]
    assert sum(on_topic) >= 7


@pytest.mark.parametrize(
    ("fault", "error", "kind", "said"),
    [
        ("429", BlockedError, ErrorKind.BLOCKED, "429 Too Many Requests"),
        ("500", RetryableFetchError, ErrorKind.HTTP_SERVER, "failed with 500"),
        ("403", PermanentFetchError, ErrorKind.HTTP_CLIENT, "settings.yml"),
        ("html", MalformedSearchAnswer, ErrorKind.DECODE, "did not answer JSON"),
        ("truncated", MalformedSearchAnswer, ErrorKind.DECODE, "did not answer JSON"),
    ],
)
async def test_a_failing_server_is_a_clear_error(
    demo: DemoWebServer, fault: str, error: type[Exception], kind: ErrorKind, said: str
) -> None:
    with SearchServer(demo.web, faults=[fault]).run_in_thread() as server:
        async with SearxClient(server.base_url) as client:
            with pytest.raises(error, match=said) as raised:
                await client.search("astronomy")
            assert raised.value.kind is kind  # type: ignore[attr-defined]
            if fault == "429":
                assert raised.value.retry_after == 7  # type: ignore[attr-defined]
            # The next answer is a good one: nothing was left broken in the client.
            assert (await client.search("astronomy")).results


async def test_a_server_that_is_not_there_is_a_retryable_error() -> None:
    async with SearxClient("http://127.0.0.1:9/") as client:
        with pytest.raises(RetryableFetchError, match="cannot reach the search server"):
            await client.search("x")


async def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="http"):
        SearxClient("ftp://x/")
    async with SearxClient("http://127.0.0.1:9/") as client:
        with pytest.raises(ValueError, match="empty query"):
            await client.search("  ")
