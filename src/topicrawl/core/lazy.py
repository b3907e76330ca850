"""Heavy modules imported on first use, off the start-up path of the crawls that never use them."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["LazyModule"]


class LazyModule:
    """Stands for a module until one of its attributes is first read, then imports it.

    numpy costs ~20 MB and ~0.05 s to import; a breadth-first crawl with the SQLite frontier
    never calls it, yet the focused strategy's and the in-memory dedupe's modules are
    imported by every crawl. Type checkers see the real module (import it under
    ``TYPE_CHECKING`` and bind this only at run time).
    """

    __slots__ = ("_module", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attribute)

    def __repr__(self) -> str:
        state = "imported" if self._module is not None else "not imported yet"
        return f"<lazy module {self._name!r}, {state}>"
