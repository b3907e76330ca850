"""Running a few lines of Python in a fresh interpreter, for tests of process-wide state
(what is imported, the garbage collector) that the test process itself must not change."""

from __future__ import annotations

import subprocess
import sys


def run_snippet(code: str) -> str:
    """Run ``code`` with this interpreter in a new process; return what it printed."""
    return subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
