"""The crawl's render stage: between fetch and parse, script shells go through a browser.

With ``render`` never (the default) the stage is not built and costs nothing. Otherwise each
fetched HTML page is judged by the render policy (:mod:`topicrawl.render.detect`, a few
kilobytes of scanning); a page to render is handed, with the bytes already fetched, to the
browser pool, and its rendered DOM replaces the body that is parsed and stored, so the links
that exist only after rendering are followed like any others. The browser fetches nothing
of its own: its scripts and XHR come through the crawl's polite fetch (robots.txt, per-host
delay and concurrency), the document itself is the one fetch the crawl made.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping

from topicrawl.core.errors import RenderFailed
from topicrawl.core.models import ErrorKind, Response
from topicrawl.render.detect import RenderPolicy
from topicrawl.render.pool import BrowserPool

__all__ = ["RenderStage"]


class RenderStage:
    """Renders the fetched pages that need it (see the module docstring).

    Args:
        policy: which pages are rendered.
        pool: the browser pool (closed by its owner).
        max_bytes: the largest rendered DOM kept (UTF-8 bytes); a larger one fails.
    """

    def __init__(self, *, policy: RenderPolicy, pool: BrowserPool, max_bytes: int) -> None:
        self._policy = policy
        self._pool = pool
        self._max_bytes = max_bytes
        self._counts: Counter[str] = Counter()
        self.seconds = 0.0

    @property
    def counts(self) -> Mapping[str, int]:
        """Pages rendered, not rendered and failed, the signals that chose them, and the
        pool's counts (requests loaded or aborted, crashes, browser restarts)."""
        return {**self._counts, **self._pool.counts}

    @property
    def pool(self) -> BrowserPool:
        return self._pool

    async def apply(self, response: Response) -> Response:
        """``response`` with its rendered DOM as the body, or as it was when it needs none.

        Raises:
            RenderFailed: the page could not be rendered (crash, time cap, DOM too large).
        """
        decision = self._policy.decide(response.final_url, response.content_type, response.body)
        if not decision.render:
            self._counts["pages/not_rendered"] += 1
            return response
        for signal in decision.signals:
            self._counts[f"signals/{signal.value}"] += 1
        body = response.body
        raw = body.encode(response.encoding or "utf-8") if isinstance(body, str) else body
        content_type = response.content_type
        if response.charset:
            content_type = f"{content_type}; charset={response.charset}"
        try:
            rendered = await self._pool.render(response.final_url, raw, content_type=content_type)
        except RenderFailed:
            self._counts["pages/render_failed"] += 1
            raise
        html = rendered.html.encode("utf-8")
        if len(html) > self._max_bytes:
            self._counts["pages/render_failed"] += 1
            raise RenderFailed(
                response.url,
                f"rendered DOM of {len(html):,} bytes is over the cap of {self._max_bytes:,}",
                kind=ErrorKind.TOO_LARGE,
            )
        self._counts["pages/rendered"] += 1
        self.seconds += rendered.seconds
        return dataclasses.replace(
            response, body=html, text=rendered.html, charset="utf-8", encoding="utf-8"
        )
