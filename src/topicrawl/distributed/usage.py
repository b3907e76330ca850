"""A worker's own CPU and memory use, as it reports them in its heartbeat (the dashboard's
Nodes page shows them)."""

from __future__ import annotations

import psutil

__all__ = ["ProcessUsage"]


class ProcessUsage:
    """This process's CPU use since the previous sample (percent, one core = 100) and its
    resident memory (bytes). The first sample's CPU is since this object was made."""

    def __init__(self) -> None:
        self._process: psutil.Process | None
        try:
            self._process = psutil.Process()
            self._process.cpu_percent(None)  # starts the interval
        except psutil.Error:
            self._process = None

    def sample(self) -> tuple[float | None, int | None]:
        """(CPU percent, resident bytes); None for a number the system would not give."""
        if self._process is None:
            return None, None
        try:
            cpu = float(self._process.cpu_percent(None))
        except psutil.Error:
            cpu = None
        try:
            rss = int(self._process.memory_info().rss)
        except psutil.Error:
            rss = None
        return cpu, rss
