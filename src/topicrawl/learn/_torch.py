"""The one place the learn extra's torch is imported, with the error that says how to get it."""

from __future__ import annotations

import importlib
import pickle
from pathlib import Path
from types import ModuleType
from typing import Any

from topicrawl.core.errors import ConfigError

__all__ = ["LEARN_EXTRA", "load_saved", "require_torch"]

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


def load_saved(path: Path, kind: str, what: str) -> dict[str, Any]:
    """A dict saved with ``torch.save`` whose ``kind`` is ``kind`` (weights only: a model
    file cannot run code).

    Raises:
        ConfigError: the file is missing, unreadable, or not a saved ``what``.
    """
    torch = require_torch()
    try:
        saved: Any = torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, ValueError, EOFError, pickle.UnpicklingError) as exc:
        raise ConfigError(f"cannot read a {what} from {path}: {exc}") from exc
    if not isinstance(saved, dict) or saved.get("kind") != kind:
        raise ConfigError(f"{path} is not a saved topicrawl {what}")
    return saved
