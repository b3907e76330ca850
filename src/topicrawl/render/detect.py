"""Whether a fetched page is a script shell that must run in a browser before it is parsed.

Pure policy, no I/O: it looks at the bytes the fetch already holds. A page is a *script
shell* when it has scripts and little of its own text (under ``min_text``), or has scripts
and an empty application root (``<div id="root"></div>``) or a client-side framework's
markers (``__NEXT_DATA__``, ``ng-version``, ``data-reactroot``, ``window.__NUXT__``...) and
less than ``hinted_text``. A framework page rendered on the server has its text and is left
alone. A ``<noscript>`` hint ("enable JavaScript") is recorded as a signal but does not raise
the bar: server-rendered documentation has one for its search box.

The text count (in bytes of the page's encoding) stops as soon as it reaches the bar, so a
long page costs a few kilobytes of scanning, not a parse; scripts, styles and templates do
not count as text.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["RenderDecision", "RenderMode", "RenderPolicy", "Signal"]


class RenderMode(enum.StrEnum):
    """When pages are rendered: never (the default, no cost), when they look like script
    shells (auto), or every HTML page (always)."""

    NEVER = "never"
    AUTO = "auto"
    ALWAYS = "always"


class Signal(enum.StrEnum):
    """What made a page look like a script shell (counted per crawl)."""

    ALWAYS = "always"
    SITE_RULE = "site_rule"
    EMPTY_ROOT = "empty_root"
    LITTLE_TEXT = "little_text"
    NOSCRIPT = "noscript_hint"
    FRAMEWORK = "framework"


@dataclass(frozen=True, slots=True)
class RenderDecision:
    """Whether to render, and why (the signals found; empty when not rendered)."""

    render: bool
    signals: tuple[Signal, ...] = ()
    text_chars: int = 0


_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_SCRIPT = re.compile(rb"<script\b", re.IGNORECASE)
_EMPTY_ROOT = re.compile(
    rb"<(?:div|main|section|body|app-root)\b[^>]*\bid\s*=\s*[\"']?"
    rb"(?:root|app|__next|__nuxt|___gatsby|svelte|main-app|application|react-root|vue-app)"
    rb"[\"']?[^>]*>\s*</(?:div|main|section|body|app-root)>"
    rb"|<app-root\b[^>]*>\s*</app-root>",
    re.IGNORECASE,
)
_NOSCRIPT = re.compile(rb"<noscript\b[^>]*>(.{0,600}?)</noscript>", re.IGNORECASE | re.DOTALL)
_NEEDS_JS = re.compile(
    rb"enable\s+javascript|javascript\s+(?:is\s+)?(?:required|disabled|must\s+be\s+enabled)"
    rb"|requires?\s+javascript|turn\s+on\s+javascript|without\s+javascript",
    re.IGNORECASE,
)
_FRAMEWORK = re.compile(
    rb"__NEXT_DATA__|window\.__NUXT__|__NUXT__|\bng-version=|\bdata-reactroot\b"
    rb"|\bng-app\b|data-v-app\b|id=[\"']___gatsby[\"']|ember-application|__remixContext"
    rb"|\bdata-sveltekit",
    re.IGNORECASE,
)
# Elements whose content is not text a reader sees, and where each ends.
_HIDDEN = (b"script", b"style", b"template", b"noscript", b"svg")
_HIDDEN_OPEN = re.compile(rb"<(!--|script|style|template|noscript|svg)\b", re.IGNORECASE)
_CLOSERS = {
    b"!--": re.compile(rb"-->"),
    **{name: re.compile(rb"</" + name + rb"\s*>", re.IGNORECASE) for name in _HIDDEN},
}
_BODY = re.compile(rb"<body\b", re.IGNORECASE)
_SPACE = re.compile(rb"\s+")
_ENTITY = re.compile(rb"&#?\w+;")


@dataclass(frozen=True, slots=True, kw_only=True)
class RenderPolicy:
    """Decides which pages are rendered.

    Args:
        mode: never, auto or always.
        min_text: a page with fewer visible characters than this (and a script) is a shell.
        hinted_text: the bar with an empty app root or a framework marker.
        site_rules: URL regexes rendered whatever the page looks like (auto mode).
        max_scan: bytes of a page looked at (markers and text); a shell is small.
    """

    mode: RenderMode = RenderMode.NEVER
    min_text: int = 200
    hinted_text: int = 1_000
    site_rules: Sequence[str] = ()
    max_scan: int = 1_000_000
    _rules: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False, default=())

    def __post_init__(self) -> None:
        if self.min_text < 0 or self.hinted_text < self.min_text or self.max_scan <= 0:
            raise ValueError("need 0 <= min_text <= hinted_text and max_scan > 0")
        object.__setattr__(self, "_rules", tuple(re.compile(rule) for rule in self.site_rules))

    def decide(self, url: str, content_type: str, body: bytes | str) -> RenderDecision:
        """Whether the page at ``url`` (its media type and body as fetched) is rendered."""
        if self.mode is RenderMode.NEVER or content_type not in _HTML_TYPES:
            return _NO
        if self.mode is RenderMode.ALWAYS:
            return RenderDecision(True, (Signal.ALWAYS,))
        if any(rule.search(url) for rule in self._rules):
            return RenderDecision(True, (Signal.SITE_RULE,))
        raw = body.encode("utf-8", "replace") if isinstance(body, str) else body
        return self.examine(raw[: self.max_scan])

    def examine(self, html: bytes) -> RenderDecision:
        """The auto-mode verdict on a page's markup."""
        if not _SCRIPT.search(html):
            return _NO  # nothing would run
        signals: list[Signal] = []
        if _EMPTY_ROOT.search(html):
            signals.append(Signal.EMPTY_ROOT)
        if any(_NEEDS_JS.search(m.group(1)) for m in _NOSCRIPT.finditer(html)):
            signals.append(Signal.NOSCRIPT)
        if _FRAMEWORK.search(html):
            signals.append(Signal.FRAMEWORK)
        # Only an empty root or a framework's markers raise the bar: a noscript hint is as
        # common on server-rendered pages whose scripts only add features (search boxes,
        # menus) as on shells, so with it a page still needs little text to be rendered.
        strong = Signal.EMPTY_ROOT in signals or Signal.FRAMEWORK in signals
        bar = self.hinted_text if strong else self.min_text
        chars = visible_chars(html, stop_at=bar)
        if chars >= bar:
            return RenderDecision(False, (), chars)
        signals.append(Signal.LITTLE_TEXT)
        return RenderDecision(True, tuple(signals), chars)


_NO = RenderDecision(False)


def visible_chars(html: bytes, *, stop_at: int) -> int:
    """Bytes of ``html``'s visible text without white space (an entity counts as one),
    counted from ``<body`` until ``stop_at`` is reached.

    One pass, each search starting where the last ended: hostile markup (thousands of
    unclosed ``<script`` tags) cannot make it quadratic. An unclosed hidden element hides
    the rest of the page, as it does in a browser.
    """
    body = _BODY.search(html)
    position = body.start() if body is not None else 0
    size = len(html)
    count = 0
    while position < size and count < stop_at:
        opening = html.find(b"<", position)
        text = html[position : opening if opening >= 0 else size]
        if text:
            count += len(_ENTITY.sub(b"x", _SPACE.sub(b"", text)))
        if opening < 0:
            break
        hidden = _HIDDEN_OPEN.match(html, opening)
        if hidden is not None:
            close = _CLOSERS[hidden.group(1).lower()].search(html, hidden.end())
            if close is None:
                break
            position = close.end()
            continue
        tag_end = html.find(b">", opening)
        if tag_end < 0:
            break
        position = tag_end + 1
    return count
