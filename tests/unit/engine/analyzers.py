"""Text analyzers for the parse worker tests; a module of their own, so the worker process
can import them by name when it unpickles one."""

from __future__ import annotations

from collections import Counter
from typing import NoReturn


class WordCounts:
    """Counts the page's words (title first), and fails on a page that says ``boom``."""

    def __call__(self, title: str, text: str) -> Counter[str]:
        if "boom" in text:
            raise ValueError("this analyzer fails on 'boom'")
        return Counter(f"{title} {text}".lower().split())


def _refuse() -> NoReturn:
    raise RuntimeError("this analyzer cannot be loaded")


class Unloadable(WordCounts):
    """Pickles fine, but unpickling it fails (as a module missing in the worker would)."""

    def __reduce__(self) -> tuple[object, ...]:
        return (_refuse, ())
