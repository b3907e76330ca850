#!/usr/bin/env bash
# Create .venv and install topicrawl into it. Usage: scripts/setup.sh [extras, e.g. dev]
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
extras="${1:-}"
if [ -n "$extras" ]; then
    .venv/bin/python -m pip install --quiet -e ".[$extras]"
else
    .venv/bin/python -m pip install --quiet -e .
fi
# Byte-compile the (editable) sources once: where PYTHONDONTWRITEBYTECODE is set, every start
# would compile them again (~0.1 s for the crawler and again for each parse worker).
.venv/bin/python -m compileall -q src
