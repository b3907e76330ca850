"""Fetching pages: the HTTP client, robots.txt, the proxy pool and charset detection."""

from __future__ import annotations

from topicrawl.fetch.client import HttpFetcher, create_session, parse_retry_after
from topicrawl.fetch.proxies import ProxyPool, ProxyState
from topicrawl.fetch.robots import (
    RobotsCache,
    RobotsDecision,
    RobotsFetch,
    RobotsFile,
    robots_agent,
)
from topicrawl.parse.charset import CharsetSource, DecodedText, decode_body, normalize_charset

__all__ = [
    "CharsetSource",
    "DecodedText",
    "HttpFetcher",
    "ProxyPool",
    "ProxyState",
    "RobotsCache",
    "RobotsDecision",
    "RobotsFetch",
    "RobotsFile",
    "create_session",
    "decode_body",
    "normalize_charset",
    "parse_retry_after",
    "robots_agent",
]
