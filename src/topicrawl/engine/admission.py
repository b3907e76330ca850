"""The one check every request passes before the crawl queues it.

Seeds, the links of a page, links a strategy held back and hands out later (``on_idle``),
links raised by a topic update, requests a strategy adds after an error, and start URLs from
sitemaps and feeds all reach the frontier through :meth:`Admission.admit`, so a limit set
once (depth, URL length, scope) holds whichever way a URL comes in. Dedupe is shared with the
frontier: it drops URLs pushed before, and the admission drops pages already fetched under
another URL (the target of a redirect), which the frontier never saw.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from topicrawl.core.models import ErrorKind, Request
from topicrawl.parse.urls import Scope

__all__ = ["Admission", "Refusal", "Refused"]


class Refusal(enum.StrEnum):
    """Why a request was not queued."""

    TOO_DEEP = "too_deep"
    URL_TOO_LONG = "url_too_long"
    OUT_OF_SCOPE = "out_of_scope"
    FETCHED = "fetched"  # the page was fetched already, reached through a redirect

    @property
    def kind(self) -> ErrorKind:
        """The failure kind a refused start URL is recorded under."""
        if self is Refusal.URL_TOO_LONG:
            return ErrorKind.URL_TOO_LONG
        return ErrorKind.OUT_OF_SCOPE


@dataclass(frozen=True, slots=True)
class Refused:
    """A request the admission turned away, and why, in words for a log line."""

    request: Request
    refusal: Refusal
    message: str


class Admission:
    """Decides which requests may be queued: no deeper than ``max_depth``, no longer than the
    scope's URL length limit, in scope, and not a page already fetched through a redirect.

    Pure policy: no I/O. Counts what it refused, by reason, in :attr:`refused`.

    Args:
        scope: the crawl's scope (its ``max_url_length`` is the length limit).
        max_depth: the deepest link level queued (seeds are depth 0).
    """

    def __init__(self, *, scope: Scope, max_depth: int) -> None:
        if max_depth < 0:
            raise ValueError(f"max_depth must be >= 0, got {max_depth}")
        self._scope = scope
        self._max_depth = max_depth
        self._max_length = scope.max_url_length
        self._fetched: set[str] = set()
        self.refused: dict[Refusal, int] = dict.fromkeys(Refusal, 0)

    @property
    def max_depth(self) -> int:
        return self._max_depth

    def refusal(self, request: Request) -> Refusal | None:
        """Why ``request`` may not be queued, or ``None`` when it may."""
        if request.depth > self._max_depth:
            return Refusal.TOO_DEEP
        url = request.url
        if len(url) > self._max_length:
            return Refusal.URL_TOO_LONG
        if url in self._fetched:
            return Refusal.FETCHED
        if not self._scope.allows(url):
            return Refusal.OUT_OF_SCOPE
        return None

    def admit(self, requests: Iterable[Request]) -> list[Request]:
        """The requests that may be queued, in order; the others are counted."""
        kept: list[Request] = []
        refused = self.refused
        for request in requests:
            why = self.refusal(request)
            if why is None:
                kept.append(request)
            else:
                refused[why] += 1
        return kept

    def sort(self, requests: Iterable[Request]) -> tuple[list[Request], list[Refused]]:
        """Like :meth:`admit`, but also says what was refused and why (for start URLs, which
        a user gave and must hear about)."""
        kept: list[Request] = []
        out: list[Refused] = []
        for request in requests:
            why = self.refusal(request)
            if why is None:
                kept.append(request)
                continue
            self.refused[why] += 1
            out.append(Refused(request, why, self.explain(request, why)))
        return kept, out

    def explain(self, request: Request, why: Refusal) -> str:
        """A refusal in words."""
        if why is Refusal.TOO_DEEP:
            return f"depth {request.depth} is over max_depth {self._max_depth}"
        if why is Refusal.URL_TOO_LONG:
            return f"URL of {len(request.url)} characters is over max_url_length {self._max_length}"
        if why is Refusal.FETCHED:
            return "fetched already, through a redirect"
        return "out of the crawl's scope (domains, include and exclude patterns)"

    def claim_redirect_target(self, url: str) -> bool:
        """Remember a redirect's final URL as fetched; ``False`` if it was claimed before.

        Kept in memory only: after a resume such a page may be fetched once more.
        """
        if url in self._fetched:
            return False
        self._fetched.add(url)
        return True
