"""Seed sources: seed lists, sitemaps, RSS/Atom feeds (and, in their own modules, microblogs).

Each source is a :class:`~topicrawl.core.protocols.Source`: ``requests()`` yields canonical
depth-0 requests. Sitemaps and feeds fetch through an injected
:data:`~topicrawl.sources.documents.FetchDocument`, usually :func:`fetcher_documents` over an
``HttpFetcher`` built with :func:`source_fetch_settings`. The microblog client
(:mod:`topicrawl.sources.microblog`) is not re-exported here: it imports much more.
"""

from __future__ import annotations

from topicrawl.sources.documents import (
    SOURCE_CONTENT_TYPES,
    Document,
    FetchDocument,
    HostileXml,
    MalformedDocument,
    SourceStats,
    fetcher_documents,
    source_fetch_settings,
)
from topicrawl.sources.feeds import Feed, FeedEntry, FeedSource, parse_feed
from topicrawl.sources.seeds import SeedFileSource, SeedList, parse_seeds, read_seed_file
from topicrawl.sources.sitemaps import (
    ParsedSitemap,
    SitemapDirectory,
    SitemapEntry,
    SitemapSource,
    parse_sitemap,
)

__all__ = [
    "SOURCE_CONTENT_TYPES",
    "Document",
    "Feed",
    "FeedEntry",
    "FeedSource",
    "FetchDocument",
    "HostileXml",
    "MalformedDocument",
    "ParsedSitemap",
    "SeedFileSource",
    "SeedList",
    "SitemapDirectory",
    "SitemapEntry",
    "SitemapSource",
    "SourceStats",
    "fetcher_documents",
    "parse_feed",
    "parse_seeds",
    "parse_sitemap",
    "read_seed_file",
    "source_fetch_settings",
]
