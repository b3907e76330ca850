"""Structured data (JSON-LD, microdata, OpenGraph through extruct) and the paths that pick a
field out of it, under a time budget per page.

extruct has no timeout, and some syntaxes (RDFa, microformats) are known to take hours on
hostile pages; only the three cheap ones run here, and the whole extraction runs under a
wall-clock budget: in a process's main thread (the parse worker's, or an inline parse) a
``SIGALRM`` interval timer interrupts it; elsewhere (a thread, where signals cannot be set)
it runs uncapped but still only on pages under :data:`MAX_BYTES`. The parse worker's own
per-page time limit (it kills the worker) stays the last line of defence.

A path is dotted keys, each optionally filtered by ``[key=text]`` (``text`` found in the
key's value, so ``interactionStatistic[interactionType=WatchAction].userInteractionCount``
picks the watch count whichever way the type is written). An ``og:...`` path reads an
OpenGraph property. Paths apply to every JSON-LD item (and its ``@graph``) and every
microdata item's properties; the first non-empty match wins.
"""

from __future__ import annotations

import contextlib
import re
import signal
import threading
from collections.abc import Iterator, Mapping
from types import FrameType
from typing import Any

from lxml.html import HtmlElement

from topicrawl.parse.methods.validators import RawValue

__all__ = ["MAX_BYTES", "StructuredData", "StructuredTimeout", "extract_structured", "lookup"]

MAX_BYTES = 5_000_000
"""Pages larger than this are not given to extruct."""
SYNTAXES = ["json-ld", "microdata", "opengraph"]

StructuredData = Mapping[str, list[Any]]


class StructuredTimeout(BaseException):
    """Structured-data extraction ran out of its time budget.

    A BaseException, so that extruct's ``errors="ignore"`` (which catches Exception) cannot
    swallow it and go on with the next syntax; :func:`time_budget` also re-raises it at the
    end of its block if something swallowed it anyway.
    """


@contextlib.contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Raise :class:`StructuredTimeout` in the body after ``seconds`` (main thread only; a no-op
    elsewhere)."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    expired: list[bool] = []
    message = f"structured data took longer than {seconds:g} s"

    def expire(signum: int, frame: FrameType | None) -> None:
        expired.append(True)
        raise StructuredTimeout(message)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if expired:
        raise StructuredTimeout(message)


def extract_structured(tree: HtmlElement, size: int, *, budget: float = 1.0) -> StructuredData:
    """The page's JSON-LD, microdata and OpenGraph items (empty for pages over MAX_BYTES).

    Raises:
        StructuredTimeout: extraction took longer than ``budget`` seconds.
    """
    if size > MAX_BYTES:
        return {}
    import extruct  # noqa: PLC0415 - loaded only when a schema needs it

    with time_budget(budget):
        found: dict[str, list[Any]] = extruct.extract(tree, syntaxes=SYNTAXES, errors="ignore")
    return found


_STEP = re.compile(r"^(?P<key>[^\[\]]+)(?:\[(?P<fkey>[^=\]]+)=(?P<fval>[^\]]*)\])?$")


def lookup(data: StructuredData, path: str) -> RawValue | None:
    """The first value ``path`` finds in ``data`` (see the module's docstring), or None."""
    if path.startswith(("og:", "video:", "twitter:")):
        for item in data.get("opengraph", []):
            for key, value in item.get("properties", []):
                if key == path and str(value).strip():
                    return str(value).strip()
        return None
    steps = path.split(".")
    items: list[Any] = []
    for item in data.get("json-ld", []):
        items.append(item)
        if isinstance(item, dict) and isinstance(item.get("@graph"), list):
            items.extend(item["@graph"])
    items.extend(i.get("properties", {}) for i in data.get("microdata", []) if isinstance(i, dict))
    for item in items:
        found = _walk(item, steps)
        if found:
            return found if len(found) > 1 else found[0]
    return None


def _walk(node: Any, steps: list[str]) -> list[str]:
    """Every leaf text at the end of ``steps`` below ``node``."""
    if isinstance(node, list):
        return [v for child in node for v in _walk(child, steps)]
    if not steps:
        if isinstance(node, dict):
            node = node.get("name", node.get("@value", node.get("value")))
            if isinstance(node, dict | list) or node is None:
                return []
        text = " ".join(str(node).split())
        return [text] if text else []
    if not isinstance(node, dict):
        return []
    match = _STEP.match(steps[0])
    if match is None:
        return []
    child = node.get(match.group("key"))
    if child is None and "properties" in node:  # a nested microdata item
        child = node["properties"].get(match.group("key"))
    if child is None:
        return []
    fkey = match.group("fkey")
    if fkey is not None:
        wanted = match.group("fval")
        kids = child if isinstance(child, list) else [child]
        child = [k for k in kids if isinstance(k, dict) and wanted in str(k.get(fkey, ""))]
    return _walk(child, steps[1:])
