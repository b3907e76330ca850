#!/usr/bin/env bash
# Debian packages the tests use: cpulimit (one of the three CPU-cap backends of the topic
# supervisor), iproute2 (ip, ss: the network-namespace partition test) and chromium (the
# dashboard's browser tests drive it through Playwright; never `playwright install`). Installed with apt-get when missing and we may (root); otherwise those tests
# skip with their reason.
set -euo pipefail
missing=()
command -v cpulimit >/dev/null 2>&1 || missing+=(cpulimit)
{ command -v ip >/dev/null 2>&1 && command -v ss >/dev/null 2>&1; } || missing+=(iproute2)
[ -x /usr/bin/chromium ] || missing+=(chromium)
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "${missing[@]}" >/dev/null 2>&1; }) \
        || echo "warning: could not install ${missing[*]}; their tests will skip" >&2
else
    echo "note: ${missing[*]} not installed (needs root + apt-get); their tests will skip" >&2
fi
