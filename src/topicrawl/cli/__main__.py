"""``python -m topicrawl.cli``."""

from __future__ import annotations

from topicrawl.cli.app import main

main()
