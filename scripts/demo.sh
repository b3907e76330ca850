#!/usr/bin/env bash
# Set up topicrawl and run the demo crawl on the built-in local web (SQLite, no services).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/topicrawl demo "$@"
