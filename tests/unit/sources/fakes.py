"""An in-memory FetchDocument for the sources tests: URL -> body, 404 otherwise."""

from __future__ import annotations

from topicrawl.core.errors import PermanentFetchError
from topicrawl.core.models import ErrorKind
from topicrawl.sources.documents import Document


class FakeWeb:
    """Serves fixed bodies by URL and records the URLs fetched, in order."""

    def __init__(self, bodies: dict[str, bytes | str]) -> None:
        self.bodies = {u: b.encode() if isinstance(b, str) else b for u, b in bodies.items()}
        self.fetched: list[str] = []

    async def __call__(self, url: str) -> Document:
        self.fetched.append(url)
        body = self.bodies.get(url)
        if body is None:
            raise PermanentFetchError(url, "404 Not Found", kind=ErrorKind.HTTP_NOT_FOUND)
        return Document(url=url, final_url=url, body=body, content_type="application/xml")
