"""The topicrawl exception tree. The class of an error says how to recover from it.

::

    TopicrawlError
    ├── ConfigError                 bad settings or arguments: fix them and start again
    ├── FetchError                  one URL could not be fetched (carries .url and .kind)
    │   ├── RetryableFetchError     worth trying again later (timeouts, resets, 5xx)
    │   │   └── BlockedError        the server asks us to slow down (429, 503 with Retry-After);
    │   │                           back off for .retry_after seconds or rotate the proxy
    │   └── PermanentFetchError     trying again will not help (4xx, robots, caps, filters)
    │       ├── RobotsDisallowed
    │       ├── OutOfScope
    │       ├── RedirectLoop
    │       ├── TooManyRedirects
    │       ├── BodyTooLarge
    │       ├── ContentTypeRejected
    │       ├── UrlTooLong
    │       └── RenderFailed    the browser could not render the page (crash, hang, caps)
    ├── StorageError                the database failed
    │   ├── DatabaseLocked          another process holds the database: stop it or use another file
    │   └── DatabaseCorrupt         the file is not a usable database: restore or remove it
    └── FrontierError               the frontier's store failed
        ├── FrontierLocked          another connection held the file past the busy timeout:
        │                           the changes stay pending and are written later
        └── FrontierInUse           another crawl holds the database's frontier: stop it, or
                                    wait for it to end
"""

from __future__ import annotations

from topicrawl.core.models import ErrorKind

__all__ = [
    "BlockedError",
    "BodyTooLarge",
    "ConfigError",
    "ContentTypeRejected",
    "DatabaseCorrupt",
    "DatabaseLocked",
    "FetchError",
    "FrontierError",
    "FrontierInUse",
    "FrontierLocked",
    "LeaseLost",
    "OutOfScope",
    "PermanentFetchError",
    "RedirectLoop",
    "RenderFailed",
    "RetryableFetchError",
    "RobotsDisallowed",
    "StorageError",
    "TooManyRedirects",
    "TopicrawlError",
    "UrlTooLong",
]


class TopicrawlError(Exception):
    """Base class of every error topicrawl raises on purpose."""


class ConfigError(TopicrawlError):
    """The settings or command-line arguments are invalid."""


class FetchError(TopicrawlError):
    """A URL could not be fetched.

    Args:
        url: the URL that failed.
        message: what went wrong, for people.
        kind: the stored category of the failure.
        status: the HTTP status, when there was a response.
    """

    default_kind: ErrorKind = ErrorKind.OTHER

    def __init__(
        self,
        url: str,
        message: str,
        *,
        kind: ErrorKind | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(f"{message} ({url})")
        self.url = url
        self.message = message
        self.kind = kind if kind is not None else self.default_kind
        self.status = status


class RetryableFetchError(FetchError):
    """A transient failure: timeouts, connection resets, 5xx."""

    default_kind = ErrorKind.CONNECTION


class BlockedError(RetryableFetchError):
    """The server asks us to slow down (429, or 503 with Retry-After).

    Args:
        retry_after: seconds the server asked us to wait, if it said.
    """

    default_kind = ErrorKind.BLOCKED

    def __init__(
        self,
        url: str,
        message: str,
        *,
        kind: ErrorKind | None = None,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(url, message, kind=kind, status=status)
        self.retry_after = retry_after


class PermanentFetchError(FetchError):
    """Trying again will not help."""

    default_kind = ErrorKind.HTTP_CLIENT


class RobotsDisallowed(PermanentFetchError):
    """robots.txt forbids the URL for our user agent."""

    default_kind = ErrorKind.ROBOTS


class OutOfScope(PermanentFetchError):
    """The URL (or a redirect target) is outside the crawl's scope rules."""

    default_kind = ErrorKind.OUT_OF_SCOPE


class RedirectLoop(PermanentFetchError):
    """A redirect chain came back to a URL it had already visited."""

    default_kind = ErrorKind.REDIRECT_LOOP


class TooManyRedirects(PermanentFetchError):
    """A redirect chain was longer than the hop limit."""

    default_kind = ErrorKind.TOO_MANY_REDIRECTS


class BodyTooLarge(PermanentFetchError):
    """The body (after decompression) was over the size cap."""

    default_kind = ErrorKind.TOO_LARGE


class ContentTypeRejected(PermanentFetchError):
    """The response's content type is not one the crawl accepts."""

    default_kind = ErrorKind.CONTENT_TYPE


class UrlTooLong(PermanentFetchError):
    """The URL is longer than the configured cap."""

    default_kind = ErrorKind.URL_TOO_LONG


class RenderFailed(PermanentFetchError):
    """The page could not be rendered: its renderer crashed, it did not finish loading
    within its time cap (kind ``timeout``), or its DOM was over the size cap."""

    default_kind = ErrorKind.RENDER


class StorageError(TopicrawlError):
    """The database failed."""


class DatabaseLocked(StorageError):
    """Another process holds the database."""


class DatabaseCorrupt(StorageError):
    """The file is not a usable database."""


class LeaseLost(TopicrawlError):
    """The lease of a page in hand is no longer this worker's (it expired, or went back
    when the worker was thought dead): its URL is queued again, so the page is not stored
    here."""


class FrontierError(TopicrawlError):
    """The frontier's backing store failed."""


class FrontierInUse(FrontierError):
    """Another crawl (in this process or another) holds the database's frontier lock; it is
    free again once that crawl ends."""


class FrontierLocked(FrontierError):
    """Another connection held the frontier's file past the busy timeout (often the crawl's
    own storage, which shares it); the changes stay pending and a later commit writes them."""
