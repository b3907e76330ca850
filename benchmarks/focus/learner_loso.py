"""The online link learner (issue #18, item 3) judged by leave-one-site-out, with
``loso.py``'s grid, cache and report, over the candidates here only.

    .venv/bin/python benchmarks/focus/learner_loso.py [--sites all] [--only NAME,NAME]

Writes ``out/learner_loso.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import loso  # noqa: E402
import run  # noqa: E402

CANDIDATES: tuple[loso.Candidate, ...] = (
    loso.Candidate("defaults"),
    loso.Candidate("learner", {"learner": True}),
    loso.Candidate(
        "learner-smooth", {"learner": True, "learner_alpha": 0.01, "learner_max_weight": 0.3}
    ),
    # Words hashed into 2 columns: in effect the numeric features alone (no URL or anchor
    # words to memorise), trusted less.
    loso.Candidate(
        "learner-numeric",
        {"learner": True, "learner_hash_bits": 1, "learner_max_weight": 0.3},
    ),
    loso.Candidate("shark", strategy="shark", selectable=False),
)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sites", default="all")
    parser.add_argument("--only", default="")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--version", default="", help="report this code version's results")
    args = parser.parse_args()
    names = list(run.REAL_SITES) if args.sites == "all" else args.sites.split(",")
    only = set(filter(None, args.only.split(",")))
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.0f} s] {message}", file=sys.stderr, flush=True)

    version = args.version or run.code_version()
    run.ensure_docsweb()
    with tempfile.TemporaryDirectory(prefix="focus-learner-") as tmp:
        sites = await loso.load_sites(names, Path(tmp), log)
        if not args.report_only:
            wanted = [c for c in CANDIDATES if not only or c.name in only]
            await loso.fill(sites, wanted, version, Path(tmp), log)
        text, _ = loso.report(sites, CANDIDATES, version)
    header = f"Run {time.strftime('%Y-%m-%d %H:%M')}, code version {version}.\n\n"
    (run.OUT / "learner_loso.md").write_text(header + text, encoding="utf-8")
    print(header + text)


if __name__ == "__main__":
    asyncio.run(main())
