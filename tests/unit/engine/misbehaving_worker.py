"""A parse worker that misbehaves on purpose, for the PageParser tests.

``python -m tests.unit.engine.misbehaving_worker MODE MARKER``:

- ``garble``: the first reply of all workers sharing ``MARKER`` (a file path) is a frame
  that cannot be unpickled; afterwards it parses like the real worker;
- ``die``: the worker exits at once on a page whose URL contains ``die``;
- ``slow``: the worker takes 3 s over a page whose URL contains ``slow``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from topicrawl.parse.worker import HEADER, pack, parse_body, read_frame, write_frame


def main(mode: str, marker: Path) -> None:
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    while (frame := read_frame(inp)) is not None:
        job, url, body, charset, _hint = frame
        if job < 0:  # a set-up request (CPU budget, analyzers): no reply
            continue
        if mode == "garble" and not marker.exists():
            marker.write_text("garbled")
            junk = b"\x00not a pickle"
            out.write(HEADER.pack(len(junk)) + junk)
            out.flush()
            continue
        if mode == "die" and "die" in url:
            os._exit(3)
        if mode == "slow" and "slow" in url:
            time.sleep(3.0)
        write_frame(out, (job, True, pack(parse_body(body, url, charset=charset))))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
