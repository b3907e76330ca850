"""A SearXNG-compatible search endpoint over the demo web, for tests, benchmarks and the demo.

``GET /search?q=...&format=json[&pageno=N]`` answers SearXNG's JSON (``results`` with ``url``,
``title``, ``content``, ``engine``, ``engines``, ``positions``, ``score``; ``answers``,
``suggestions``, ``unresponsive_engines``...). Three "engines" index the demo web's documents
and disagree, as real ones do:

- ``lexicon`` ranks by how often the query's words occur in the title and text;
- ``titles`` ranks by the query's words in the title only (then shorter paths first);
- ``links`` ranks the pages that mention a query word by how many links point to them (hubs
  and home pages first).

Each engine indexes only some hosts (engine ``i`` skips every third host from ``i``), so
no engine sees the whole web. Results are merged as SearXNG merges them (one result per URL,
its engines and positions, score = sum of ``len(positions) / position``). Pages robots.txt
disallows and non-documents are not indexed. ``format`` other than ``json`` is a 403, as on a
SearXNG instance whose JSON format is off.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from aiohttp import web as aioweb

from topicrawl.demoweb.graph import DemoWeb
from topicrawl.demoweb.model import DemoPage, Kind
from topicrawl.demoweb.threaded import ThreadedServer, serve_app

__all__ = ["ENGINES", "DemoSearch", "SearchServer"]

ENGINES = ("lexicon", "titles", "links")
PAGE_SIZE = 10
_WORD = re.compile(r"\w+")
_INDEXED = frozenset({Kind.HOME, Kind.SECTION, Kind.ARTICLE, Kind.UTILITY})


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


@dataclass(frozen=True, slots=True)
class _Doc:
    url: str
    page: DemoPage
    title: set[str]
    counts: Counter[str]
    inlinks: int


class DemoSearch:
    """The engines over one demo web bound to its port (``DemoWebServer.web``; see the
    module docstring)."""

    def __init__(self, web: DemoWeb) -> None:
        self._web = web
        inlinks: Counter[str] = Counter()
        for page in web.pages:
            for link in page.links:
                target = web.find(f"http://{link.host}:{web.port}{link.target}")
                if target is not None:
                    inlinks[web.url_of(target)] += 1
        host_index = {host.address: i for i, host in enumerate(web.hosts)}
        self._docs: list[tuple[int, _Doc]] = []
        for page in web.pages:
            if page.kind not in _INDEXED or page.status != 200:
                continue
            url = web.url_of(page)
            if web.robots_disallowed(url):
                continue
            doc = _Doc(url, page, set(_words(page.title)), Counter(_words(page.text)), inlinks[url])
            self._docs.append((host_index[page.host], doc))

    def engine(self, name: str, query: str) -> list[_Doc]:
        """One engine's ranking for ``query`` (all its hits, best first)."""
        terms = set(_words(query))
        skip = ENGINES.index(name)
        docs = [doc for host, doc in self._docs if host % 3 != skip]
        rank: Callable[[_Doc], tuple[float, ...]]
        if name == "lexicon":
            rank = lambda d: (-sum(d.counts[t] for t in terms) / (1 + len(d.counts)) ** 0.5,)  # noqa: E731
            hits = [d for d in docs if any(d.counts[t] for t in terms)]
        elif name == "titles":
            rank = lambda d: (-len(terms & d.title), len(d.page.path))  # noqa: E731
            hits = [d for d in docs if terms & d.title]
        else:
            rank = lambda d: (-d.inlinks,)  # noqa: E731
            hits = [d for d in docs if any(d.counts[t] for t in terms)]
        return sorted(hits, key=lambda d: (*rank(d), d.url))

    def answer(self, query: str, page: int = 1) -> dict[str, object]:
        """SearXNG's JSON answer for one page of results."""
        merged: dict[str, dict[str, object]] = {}
        start = (page - 1) * PAGE_SIZE
        for name in ENGINES:
            ranked = self.engine(name, query)[start : start + PAGE_SIZE]
            for position, doc in enumerate(ranked, start=1):
                entry = merged.setdefault(
                    doc.url,
                    {
                        "url": doc.url,
                        "title": doc.page.title,
                        "content": " ".join(doc.page.paragraphs[0][:2])
                        if doc.page.paragraphs
                        else "",
                        "engine": name,
                        "engines": [],
                        "positions": [],
                        "category": "general",
                    },
                )
                engines = entry["engines"]
                positions = entry["positions"]
                assert isinstance(engines, list)
                assert isinstance(positions, list)
                engines.append(name)
                positions.append(position)
        for entry in merged.values():
            positions = entry["positions"]
            assert isinstance(positions, list)
            entry["score"] = sum(len(positions) / p for p in positions)
        results = sorted(merged.values(), key=lambda e: (-float(e["score"]), str(e["url"])))  # type: ignore[arg-type]
        return {
            "query": query,
            "number_of_results": len(results),
            "results": results,
            "answers": [],
            "corrections": [],
            "infoboxes": [],
            "suggestions": [],
            "unresponsive_engines": [],
        }


class SearchServer(ThreadedServer):
    """Serves :class:`DemoSearch` on ``host``:``port`` (0: any free port).

    ``faults`` makes it misbehave for tests: each request takes the next of them (``"429"``,
    ``"403"``, ``"500"``, ``"html"``, ``"truncated"``) until they run out, then answers normally.
    """

    thread_name = "demo-search"

    def __init__(
        self, web: DemoWeb, *, host: str = "127.0.0.1", port: int = 0, faults: Sequence[str] = ()
    ) -> None:
        self._web = web
        self._host = host
        self._port = port
        self._faults = list(faults)
        self._runner: aioweb.AppRunner | None = None
        self._search: DemoSearch | None = None
        self.base_url = ""
        self.queries: list[str] = []

    async def start(self) -> str:
        app = aioweb.Application()
        app.router.add_get("/search", self._handle)
        runner, port = await serve_app(app, self._host, self._port)
        self._runner = runner
        self._search = DemoSearch(self._web)
        self.base_url = f"http://{self._host}:{port}/"
        return self.base_url

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def _handle(self, request: aioweb.Request) -> aioweb.Response:
        query = request.query.get("q", "")
        self.queries.append(query)
        if self._faults:
            fault = self._faults.pop(0)
            if fault == "429":
                return aioweb.Response(
                    status=429, text="Too Many Requests", headers={"Retry-After": "7"}
                )
            if fault == "403":
                return aioweb.Response(status=403, text="Forbidden")
            if fault == "500":
                return aioweb.Response(status=500, text="Internal Server Error")
            if fault == "html":
                return aioweb.Response(
                    text="<html><body>results</body></html>", content_type="text/html"
                )
            if fault == "truncated":
                return aioweb.Response(
                    body=b'{"results": [{"url": "http://a', content_type="application/json"
                )
        if request.query.get("format") != "json":
            return aioweb.Response(status=403, text="Forbidden")
        try:
            page = max(1, int(request.query.get("pageno", "1")))
        except ValueError:
            page = 1
        assert self._search is not None
        body = json.dumps(self._search.answer(query, page), ensure_ascii=False)
        return aioweb.Response(text=body, content_type="application/json")
