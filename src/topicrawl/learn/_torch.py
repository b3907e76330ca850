"""The one place the learn extra's torch is imported, with the error that says how to get it."""

from __future__ import annotations

import importlib
from types import ModuleType

from topicrawl.core.errors import ConfigError

__all__ = ["LEARN_EXTRA", "require_torch"]

LEARN_EXTRA = "learn"


def require_torch() -> ModuleType:
    """The torch module.

    Raises:
        ConfigError: torch is not installed (the ``learn`` extra is missing).
    """
    try:
        return importlib.import_module("torch")
    except ImportError as error:
        raise ConfigError(
            "learned scheduling and URL distillation need torch: install topicrawl's "
            f"'{LEARN_EXTRA}' extra (pip install 'topicrawl[{LEARN_EXTRA}]', which brings the "
            "torch 2.13.0 CPU build)"
        ) from error
