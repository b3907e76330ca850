"""Link scores: link blocks, inherited score, link priority, hub importance, shark-search, and
the bounded pool of links held back under the threshold."""

from __future__ import annotations

import functools
import heapq
import itertools
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from urllib.parse import unquote, urlsplit

from topicrawl.core.models import Link, Request
from topicrawl.focus.families import URL_MEMO, URL_MEMO_CHARS

__all__ = [
    "CandidatePool",
    "InboundEvidence",
    "TemplateBlocks",
    "TemplateHindsight",
    "block_sizes",
    "block_texts",
    "diluted_block_score",
    "hub_score",
    "inherited_score",
    "link_priority",
    "link_words",
    "on_topic_links",
    "page_importance",
    "relative_to_best",
    "shark_potential",
    "split_identifiers",
    "url_directory_words",
    "url_word_pair",
    "url_words",
]

# A word boundary inside an identifier: "ReentrantLock" -> "Reentrant Lock",
# "HTTPServer" -> "HTTP Server", "utf8Decoder" -> "utf8 Decoder".
_IDENTIFIER_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_URL_SEPARATORS = re.compile(r"[^\w]+|_")
_FILE_SUFFIX = re.compile(r"\.(?:s?html?|php|aspx?|jsp)$", re.IGNORECASE)
_MAX_URL_PATH = 500  # characters of a URL path looked at (hostile URLs can be long)


def block_texts(links: Iterable[Link]) -> dict[int, str]:
    """The extended anchor text of each DOM block: the parser's ``block_text``, or else the
    anchors of the block's links joined in document order."""
    anchors: dict[int, list[str]] = {}
    given: dict[int, str] = {}
    for link in links:
        if link.block_text and link.block not in given:
            given[link.block] = link.block_text
        anchors.setdefault(link.block, []).append(link.anchor)
    return {
        block: given.get(block) or " ".join(a for a in texts if a)
        for block, texts in anchors.items()
    }


def block_sizes(links: Iterable[Link]) -> dict[int, int]:
    """How many of the page's links each block holds."""
    sizes: dict[int, int] = {}
    for link in links:
        sizes[link.block] = sizes.get(link.block, 0) + 1
    return sizes


def diluted_block_score(score: float, *, links: int, most_links: int) -> float:
    """A block's anchor score as evidence for each of its ``links``: unchanged up to
    ``most_links`` links, then scaled by ``most_links / links`` (0 for ``most_links``: never
    scaled). The extended anchor text of a long list says the list touches the topic, not
    which of its links do."""
    if most_links <= 0 or links <= most_links:
        return score
    return score * most_links / links


def split_identifiers(text: str) -> str:
    """Put spaces inside camel-case identifiers, so their words can match a topic:
    ``"ConcurrentHashMap"`` -> ``"Concurrent Hash Map"``."""
    return _IDENTIFIER_BOUNDARY.sub(" ", text)


def url_words(url: str) -> str:
    """The words of a URL's path: separators and camel case split, the file suffix dropped.

    ``http://h/api/java/util/concurrent/ReentrantLock.html`` ->
    ``"api java util concurrent Reentrant Lock"``.
    """
    return url_word_pair(url)[0]


def url_directory_words(url: str) -> str:
    """The words of the directories of a URL's path, without its last segment (the file):
    ``http://h/api/java/util/concurrent/ReentrantLock.html`` -> ``"api java util concurrent"``.
    """
    return url_word_pair(url)[1]


def url_word_pair(url: str) -> tuple[str, str]:
    """:func:`url_words` and :func:`url_directory_words` of ``url``, its path read once
    (remembered for the most recent URLs, see :data:`~topicrawl.focus.families.URL_MEMO`)."""
    return _url_word_pair(url) if len(url) <= URL_MEMO_CHARS else _url_word_pair.__wrapped__(url)


@functools.lru_cache(maxsize=URL_MEMO)
def _url_word_pair(url: str) -> tuple[str, str]:
    path = _url_path(url)
    return _file_words(path), _directory_words(path)


def _url_path(url: str) -> str:
    try:
        return unquote(urlsplit(url).path[:_MAX_URL_PATH])
    except ValueError:
        return ""


def _file_words(path: str) -> str:
    return _path_words(_FILE_SUFFIX.sub("", path))


def _directory_words(path: str) -> str:
    return _path_words(path[: path.rfind("/") + 1])


def _path_words(path: str) -> str:
    # One pass of the camel-case split over the joined words: it never matches across the
    # spaces between them, so this is the same as splitting each part.
    return split_identifiers(" ".join(part for part in _URL_SEPARATORS.split(path) if part))


def link_words(link: Link) -> str:
    """A link's own evidence, apart from its block: its anchor text and the words of its URL,
    identifiers split (a link's target is often named better by its URL than its anchor)."""
    return f"{split_identifiers(link.anchor)} {url_words(link.url)}"


def inherited_score(
    *, parent_similarity: float, parent_inherited: float, parent_relevant: bool, decay: float
) -> float:
    """A child's inherited score: ``decay * sim(parent)`` if the parent is relevant, else
    ``decay * inherited(parent)``, so relevance fades over a run of off-topic pages."""
    return decay * (parent_similarity if parent_relevant else parent_inherited)


def link_priority(*, inherited: float, anchor: float, inherited_weight: float) -> float:
    """``c * inherited + (1 - c) * anchor`` with ``c = inherited_weight``."""
    return inherited_weight * inherited + (1.0 - inherited_weight) * anchor


def on_topic_links(anchors: Iterable[float], *, above: float, weighted: bool) -> float:
    """How many of a page's links are on the topic, for ``Hub(u)``: the links whose anchor
    scores more than ``above``, or (``weighted``) the sum of those anchor scores, so that a
    page of forty links that each barely name the topic counts as a few on-topic links, not
    as forty."""
    kept = [score for score in anchors if score > above]
    return sum(kept) if weighted else float(len(kept))


def hub_score(on_topic_links: float, most_seen: float) -> float:
    """``Hub(u)``: the page's on-topic links over the most any page has had (0 when none has)."""
    if most_seen <= 0:
        return 0.0
    return min(on_topic_links / most_seen, 1.0)


def relative_to_best(value: float, best: float) -> float:
    """``value`` over the best seen (0 when nothing scored yet), at most 1."""
    if best <= 0.0:
        return 0.0
    return min(value / best, 1.0)


def page_importance(*, similarity: float, hub: float, m1: float) -> float:
    """``pu = m1 * cos + m2 * Hub(u)`` with ``m2 = 1 - m1``."""
    return m1 * similarity + (1.0 - m1) * hub


def shark_potential(
    *, inherited: float, anchor: float, context: float, beta: float, gamma: float
) -> float:
    """Shark-search's potential score of a link.

    ``neighbourhood = beta * anchor + (1 - beta) * anchor_context``, where ``anchor_context``
    is 1 when the anchor itself matches the topic and the context's similarity otherwise;
    ``potential = gamma * inherited + (1 - gamma) * neighbourhood``.
    """
    anchor_context = 1.0 if anchor > 0.0 else context
    neighbourhood = beta * anchor + (1.0 - beta) * anchor_context
    return gamma * inherited + (1.0 - gamma) * neighbourhood


class InboundEvidence:
    """What the relevant pages that link to a URL pass on to it, together: each relevant
    parent's inherited score ``x`` joins the URL's evidence by noisy-OR (``1 - (1 - e)(1 - x)``),
    at most ``ceiling`` (what one parent of importance 1 would pass on). A page that many
    relevant pages link to (a manual's table of contents, linked from every page's header
    as "Documentation", whose anchor names nothing) rises with each of them, where the best
    single parent's share would leave it under every link whose anchor names the topic.
    Forgets a URL once crawled; holds at most ``capacity`` URLs (later ones are not kept)."""

    def __init__(self, *, ceiling: float, capacity: int = 200_000) -> None:
        if not 0.0 <= ceiling <= 1.0:
            raise ValueError("ceiling must be in [0, 1]")
        self._ceiling = ceiling
        self._capacity = capacity
        self._evidence: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self._evidence)

    def get(self, url: str) -> float:
        """The URL's evidence so far (0 when no relevant page has linked to it)."""
        return self._evidence.get(url, 0.0)

    def add(self, url: str, inherited: float) -> float:
        """A relevant page links to ``url`` passing on ``inherited``; returns the evidence."""
        held = self._evidence.get(url)
        if held is None and len(self._evidence) >= self._capacity:
            return min(inherited, self._ceiling)
        combined = 1.0 - (1.0 - (held or 0.0)) * (1.0 - min(max(inherited, 0.0), 1.0))
        self._evidence[url] = value = min(combined, self._ceiling)
        return value

    def crawled(self, url: str) -> None:
        """``url`` was fetched: nothing waits for it any more."""
        self._evidence.pop(url, None)


class CandidatePool:
    """Links scored under the threshold, kept (the best ``capacity`` of them) so that a later,
    lower threshold can still queue them. One entry per URL, at its best score."""

    def __init__(self, *, capacity: int) -> None:
        if capacity < 0:
            raise ValueError("capacity cannot be negative")
        self._capacity = capacity
        self._best: dict[str, tuple[float, int, Request]] = {}
        self._heap: list[tuple[float, int, str]] = []  # lowest score first; stale entries skipped
        self._sequence = itertools.count()

    def __len__(self) -> int:
        return len(self._best)

    def __contains__(self, url: object) -> bool:
        return url in self._best

    def add(self, request: Request) -> None:
        """Hold ``request`` back; when full, the lowest-scored candidate is dropped."""
        if self._capacity == 0:
            return
        held = self._best.get(request.url)
        if held is not None and held[0] >= request.score:
            return
        if held is None and len(self._best) >= self._capacity:
            lowest = self._lowest()
            if lowest is not None and lowest[0] >= request.score:
                return
            if lowest is not None:
                del self._best[lowest[2].url]
        order = next(self._sequence)
        self._best[request.url] = (request.score, order, request)
        heapq.heappush(self._heap, (request.score, order, request.url))
        if len(self._heap) > 2 * len(self._best) + 64:
            self._heap = [(s, o, r.url) for s, o, r in self._best.values()]
            heapq.heapify(self._heap)

    def discard(self, url: str) -> None:
        """Forget ``url`` (it was queued after all)."""
        self._best.pop(url, None)

    def release(self, threshold: float) -> list[Request]:
        """Remove and return every candidate scored at least ``threshold``, best first."""
        chosen = [entry for entry in self._best.values() if entry[0] >= threshold]
        return self._take(chosen)

    def take_best(self, count: int) -> list[Request]:
        """Remove and return the ``count`` best candidates (for when the frontier runs dry)."""
        return self._take(heapq.nlargest(count, self._best.values(), key=_rank))

    def _take(self, entries: Sequence[tuple[float, int, Request]]) -> list[Request]:
        ordered = sorted(entries, key=_rank, reverse=True)
        for _, _, request in ordered:
            del self._best[request.url]
        return [request for _, _, request in ordered]

    def _lowest(self) -> tuple[float, int, Request] | None:
        while self._heap:
            _, order, url = self._heap[0]
            held = self._best.get(url)
            if held is not None and held[1] == order:
                return held
            heapq.heappop(self._heap)
        return None


def _rank(entry: tuple[float, int, Request]) -> tuple[float, int]:
    # Best score first; among equals, the earlier candidate first.
    return entry[0], -entry[1]


class TemplateBlocks:
    """Link blocks that repeat across a host's pages: the site's template (navigation bars,
    breadcrumbs, footers), told apart from the blocks the page's author wrote.

    A block is known by its extended anchor text; one that holds at least ``min_links`` links
    and has been seen on at least ``min_pages`` pages of the host (this one included) is
    template. Its anchors are the same on every page, and its URLs are made from the page's
    own address (a "Use" or "Tree" link next to every class page), so neither says anything
    about the target. A block whose anchors (the parts of its text between ``" | "``) overlap
    those of a known template block of the host by at least ``similarity`` (Jaccard) is
    template too: the same bar on another kind of page, one entry more or less (below 1).
    At most ``capacity`` block texts are counted per crawl (by hash, so a long text costs no
    more than a short one); past it, new texts are not counted (blocks already counted still
    are). The counts are not part of a crawl's saved state: a resumed crawl learns its
    template again from its first pages.
    """

    def __init__(
        self,
        *,
        min_pages: int,
        min_links: int = 3,
        similarity: float = 1.0,
        capacity: int = 50_000,
    ) -> None:
        if min_pages < 0 or min_links < 1 or capacity < 0 or not 0.0 < similarity <= 1.0:
            raise ValueError(
                "min_pages and capacity must be >= 0, min_links >= 1, similarity in (0, 1]"
            )
        self._min_pages = min_pages
        self._min_links = min_links
        self._similarity = similarity
        self._capacity = capacity
        self._pages: dict[tuple[str, int], int] = {}
        self._known: dict[str, list[frozenset[str]]] = {}
        self.recognised: tuple[int, ...] = ()
        """The blocks of the last observed page that it made template (their text reached
        ``min_pages`` pages of the host with it)."""

    def observe(
        self, host: str, texts: Mapping[int, str], sizes: Mapping[int, int]
    ) -> frozenset[int]:
        """Count one page's blocks (``texts`` and ``sizes`` by block number) on ``host``;
        return the numbers of its template blocks (none when ``min_pages`` is 0)."""
        self.recognised = ()
        if self._min_pages <= 0:
            return frozenset()
        counts = self._pages
        template: list[int] = []
        recognised: list[int] = []
        for block, text in texts.items():
            if sizes.get(block, 0) < self._min_links or not text:
                continue
            key = (host, hash(text))
            seen = counts.get(key)
            if seen is None:
                if len(counts) >= self._capacity:
                    continue
                seen = 0
            counts[key] = seen + 1
            if seen + 1 >= self._min_pages:
                template.append(block)
                if seen + 1 == self._min_pages:
                    self._remember(host, text)
                    recognised.append(block)
            elif self._similarity < 1.0 and self._like_known(host, text):
                template.append(block)
        self.recognised = tuple(recognised)
        return frozenset(template)

    def _remember(self, host: str, text: str) -> None:
        known = self._known.setdefault(host, [])
        if len(known) < _MAX_KNOWN_TEMPLATES:
            known.append(frozenset(text.split(" | ")))

    def _like_known(self, host: str, text: str) -> bool:
        anchors = frozenset(text.split(" | "))
        return any(
            len(anchors & known) >= self._similarity * len(anchors | known)
            for known in self._known.get(host, ())
        )


_MAX_KNOWN_TEMPLATES = 100  # template blocks per host compared with new blocks


BlockKey = tuple[str, int]
"""A link block as :class:`TemplateHindsight` knows it: the host and the hash of its text."""


class TemplateHindsight:
    """Scores to take back once a block turns out to be the site's template.

    A host's first pages queue the links of its navigation bars at full anchor and inherited
    score: nothing marks a block as template until its text has been seen on a few pages.
    For each waiting link this keeps the sighting that gave its best score (its block and
    the score the link would have had from a template block) and the best score any other
    block gave it (approximately: the best of the sightings that were not its best when
    they came). When a block is recognised as template, :meth:`recognised` gives the new
    score of each link whose best score came from that block, unless the block links to it
    from every page: the better of its template score and its other sightings. At most
    ``capacity`` links are remembered.
    """

    def __init__(self, *, capacity: int = 200_000) -> None:
        if capacity < 0:
            raise ValueError("capacity must be >= 0")
        self._capacity = capacity
        self._best: dict[str, tuple[float, BlockKey | None, float]] = {}  # score, block, template
        self._other: dict[str, float] = {}  # url -> best score from another sighting
        self._by_block: dict[BlockKey, list[str]] = {}
        self._indexed = 0

    def __len__(self) -> int:
        return len(self._best)

    def saw(self, url: str, score: float, *, block: BlockKey | None, template_score: float) -> None:
        """A link was queued at ``score`` from ``block`` (a hashable key of the host and the
        block's text; ``None`` for a block that cannot become template)."""
        best = self._best.get(url)
        if best is None:
            if len(self._best) >= self._capacity:
                return
            self._best[url] = (score, block, template_score)
            self._index(url, block)
            return
        best_score, best_block, best_template = best
        if block is not None and block == best_block:
            self._best[url] = (max(score, best_score), block, max(template_score, best_template))
        elif score > best_score:
            self._other[url] = max(self._other.get(url, 0.0), best_score)
            self._best[url] = (score, block, template_score)
            self._index(url, block)
        else:
            self._other[url] = max(self._other.get(url, 0.0), score)

    def recognised(
        self, block: BlockKey, *, constant: Collection[str] = ()
    ) -> list[tuple[str, float]]:
        """``block`` is template now: (URL, new score) of the links whose best score it gave,
        where the new score is lower. ``constant``: the links of the copy that made the
        block template; one that an earlier copy had too is the same on every page (home,
        section page: a breadcrumb's parent) and keeps its score: only the links a copy
        makes from its own page's address (a "Use" link per class page) are taken back."""
        lowered: list[tuple[str, float]] = []
        for url in self._by_block.pop(block, ()):
            best = self._best.get(url)
            if best is None or best[1] != block or url in constant:
                continue
            score = max(best[2], self._other.get(url, 0.0))
            self._best[url] = (score, None, score)
            if score < best[0]:
                lowered.append((url, score))
        return lowered

    def crawled(self, url: str) -> None:
        """Forget a link once its page is crawled."""
        self._best.pop(url, None)
        self._other.pop(url, None)

    def _index(self, url: str, block: BlockKey | None) -> None:
        if block is None:
            return
        self._by_block.setdefault(block, []).append(url)
        self._indexed += 1
        if self._indexed > 2 * self._capacity + 1024:
            # Most entries are of crawled links or of links whose best sighting moved on.
            by_block: dict[BlockKey, list[str]] = {}
            for waiting, (_, key, _) in self._best.items():
                if key is not None:
                    by_block.setdefault(key, []).append(waiting)
            self._by_block = by_block
            self._indexed = sum(len(urls) for urls in by_block.values())
