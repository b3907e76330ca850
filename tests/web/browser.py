"""Playwright in the system Chromium, with every dialog, console message, navigation, popup
and request of a page recorded, so a test can tell that nothing from crawled content ran."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import IN_CI

CHROMIUM = os.environ.get("TOPICRAWL_CHROMIUM", "/usr/bin/chromium")
# Where screenshots are copied when TOPICRAWL_UPDATE_SCREENSHOTS=1 (the README shows them).
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "dashboard"

# What Chromium itself says when the sandbox or the CSP refuses something: proof that a thing
# was stopped, not that it ran.
_REFUSALS = ("Refused", "Blocked", "violates", "sandboxed")


def require_browser() -> None:
    """Skip (outside CI) or fail (in CI) without Playwright and the system Chromium."""
    problem = None
    try:
        import playwright.sync_api  # noqa: F401, PLC0415
    except ImportError:
        problem = "playwright is not installed (pip install playwright)"
    if problem is None and not Path(CHROMIUM).is_file():
        problem = f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    if problem is None:
        return
    if IN_CI:
        pytest.fail(f"{problem}; CI must have it", pytrace=False)
    pytest.skip(problem)


@dataclass
class Watch:
    """Everything a page did that crawled content could have caused."""

    origin: str
    dialogs: list[str] = field(default_factory=list)
    console: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    navigations: list[str] = field(default_factory=list)
    popups: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # requests the CSP stopped before sending

    def attach(self, context: Any, page: Any) -> None:
        def on_dialog(dialog: Any) -> None:
            self.dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", on_dialog)
        page.on("console", lambda message: self.console.append((message.type, message.text)))
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.on("framenavigated", lambda frame: self.navigations.append(frame.url))
        context.on("page", lambda popup: self.popups.append(popup.url))
        context.on("request", lambda request: self.requests.append(request.url))
        context.on("requestfailed", self._on_failed)

    def _on_failed(self, request: Any) -> None:
        if request.failure == "csp":
            self.refused.append(request.url)

    def assert_nothing_ran(self, marker: str) -> None:
        assert not self.dialogs, self.dialogs
        assert not self.popups, self.popups
        assert not self.errors, self.errors
        assert not [text for _, text in self.console if marker in text], self.console
        unexplained = [
            (kind, text)
            for kind, text in self.console
            if not (kind == "error" and any(word in text for word in _REFUSALS))
        ]
        assert not unexplained, unexplained
        foreign = [url for url in self.navigations if not _ours(url, self.origin)]
        assert not foreign, foreign
        # Chromium reports a request the CSP refused, then its failure: it never left.
        outside = [
            url for url in self.requests if not _ours(url, self.origin) and url not in self.refused
        ]
        assert not outside, outside


def _ours(url: str, origin: str) -> bool:
    return url.startswith(f"{origin}/") or url in {origin, "about:blank", "about:srcdoc"}


@dataclass
class Browser:
    browser: Any
    shots: Path

    def open(self, origin: str) -> tuple[Any, Watch]:
        context = self.browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        watch = Watch(origin)
        watch.attach(context, page)
        return page, watch

    def screenshot(self, page: Any, name: str, *, full_page: bool = False) -> None:
        path = self.shots / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page)
        if os.environ.get("TOPICRAWL_UPDATE_SCREENSHOTS") == "1":
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, SCREENSHOTS / path.name)


def launch(shots: Path) -> Iterator[Browser]:
    require_browser()
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield Browser(chromium, shots)
        finally:
            chromium.close()
