"""`--render auto|always` without Playwright installed: a clear configuration error at start."""

from __future__ import annotations

import contextlib
import importlib.util
from typing import Any

import pytest

from topicrawl.core.config import CrawlSettings
from topicrawl.core.errors import ConfigError
from topicrawl.engine import build


async def test_render_without_playwright_is_refused_before_the_crawl(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "playwright" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    unused: Any = None  # the check comes before any of the stage's parts is used
    async with contextlib.AsyncExitStack() as stack:
        assert (
            await build._render_stage(
                stack, CrawlSettings(), fetcher=unused, robots=None, proxies=None, fetch=unused
            )
            is None
        )
        with pytest.raises(ConfigError, match=r"topicrawl\[render\]"):
            await build._render_stage(
                stack,
                CrawlSettings(render="auto"),
                fetcher=unused,
                robots=None,
                proxies=None,
                fetch=unused,
            )
