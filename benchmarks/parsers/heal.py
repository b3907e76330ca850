"""Self-healing benchmark: per-field accuracy of the parser library before and after each kind
of template change of the demo video site, beside a static parser and a hand-written parser
per template.

For each change (cosmetic, structural, jsonld_only, counts_reformatted, ab) a fresh library
reads the detail and play pages of ``build_video_site(seed)`` in a seeded order: the first
``--before`` pages as template v1 (it learns), the rest under the changed template. Per system:

- field accuracy before the change, in the first 5 pages after it, and after those;
- pages until recovery: pages after the change until a window of 5 pages reaches the target
  accuracy (0.95; 0.90 for structural) and stays there on average over the rest;
- methods tried per page (the library) after recovery, i.e. in steady state;
- silently wrong fields: fields a system output as valid whose value is not the truth, over
  all fields output (a field left out, or a page flagged as failed, is not silent).

Systems: ``library`` (this library, schemas of ``video.toml`` written against v1),
``static`` (the v1 rules alone, as a parser written once), ``handwritten`` (rules written by
hand for each template, told which template it faces: the ceiling).

    PYTHONPATH=src python benchmarks/parsers/heal.py [--seeds 0 1 2 3 4] [--before 20 60]
        [--json out.json]

With several seeds and ``--before`` values it prints one markdown table: per change and
system, means over the runs (pages to recover: median and worst).

``--plays-after`` (session 20) serves every detail page before every play page (each kind in
its seeded order), so with ``--before`` up to the number of detail pages the change comes
before the library has seen any play page: their v1 rules never matched, nothing was learnt
for their patterns. Each run then also reports the play pages' field accuracy after the
change (``play_after``) and a second table.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import lxml.html

from topicrawl.demoweb.video import build_video_site, layout_of
from topicrawl.parse.methods import (
    Hint,
    ParserConfig,
    ParserLibrary,
    SiteSchema,
    extract,
    load_config,
)
from topicrawl.parse.methods.rules import apply_rule
from topicrawl.parse.methods.validators import Invalid, validate

HERE = Path(__file__).parent
BASE = "https://video.example.com"
CHANGES = ("cosmetic", "structural", "jsonld_only", "counts_reformatted", "ab")
WINDOW = 5

# Hand-written rules per layout (what a person would write after seeing each template).
_HAND: dict[str, dict[str, dict[str, str]]] = {
    "v1": {},  # the schema file's own rules
    "cosmetic": {
        "video-detail": {
            "title": "css:h1.mv-card__name::text",
            "directors": "css:div.mv-crew a::text",
            "actors": "css:div.mv-cast a::text",
            "plays": "css:li.cnt-plays em::text",
            "comments": "css:li.cnt-comments em::text",
            "favourites": "css:li.cnt-favourites em::text",
        },
        "video-play": {"title": "css:h1.vp__heading::text", "plays": "css:b.vcount::text"},
    },
    "structural": {
        "video-detail": {
            "title": "css:header.hero h2::text",
            "directors": "xpath://dl/dd[4]/text()",
            "actors": "xpath://dl/dd[3]/text()",
            "plays": "xpath://table[@class='numbers']//tr[2]/td[1]/text()",
            "comments": "xpath://table[@class='numbers']//tr[2]/td[2]/text()",
            "favourites": "xpath://table[@class='numbers']//tr[2]/td[3]/text()",
        },
        "video-play": {
            "title": "css:section.info h3::text",
            "plays": "xpath://section[@class='info']//dd[last()]/text()",
        },
    },
}


def _schemas_with_rules(config: ParserConfig, layout: str) -> ParserConfig:
    """The config with the hand-written rules of ``layout`` in place of the v1 rules."""
    if layout == "v1" or layout == "counts_reformatted":
        return config
    hand = _HAND.get(layout, {})
    schemas = []
    for schema in config.schemas:
        rules = hand.get(schema.name, {})
        fields = tuple(
            type(spec)(
                spec.name,
                spec.validator,
                spec.required,
                spec.structured,
                rules.get(spec.name, spec.rule) if layout != "jsonld_only" else None,
                spec.metadata,
            )
            for spec in schema.fields
        )
        schemas.append(SiteSchema(schema.name, schema.domains, fields, schema.paths))
    return ParserConfig(schemas=tuple(schemas))


@dataclass
class Tally:
    """Per-page outcomes of one system on one change."""

    accuracy: list[float] = field(default_factory=list)
    tried: list[int] = field(default_factory=list)
    output: int = 0
    wrong_output: int = 0


def _same(expected: object, got: object) -> bool:
    if isinstance(expected, list):
        return isinstance(got, list) and [str(x) for x in got] == [str(x) for x in expected]
    if isinstance(expected, int) and not isinstance(expected, bool):
        return isinstance(got, int | float) and int(got) == expected
    return str(got) == str(expected)


def _score(
    tally: Tally,
    truth: Mapping[str, object],
    record: Mapping[str, object] | None,
    names: Sequence[str],
) -> None:
    fields = [n for n in names if n in truth]
    right = 0
    for name in fields:
        got = record.get(name) if record is not None else None
        if got is None:
            continue
        tally.output += 1
        if _same(truth[name], got):
            right += 1
        else:
            tally.wrong_output += 1
    tally.accuracy.append(right / len(fields) if fields else 1.0)


def _run_change(
    change: str, config: ParserConfig, pages: list[str], before: int, seed: int
) -> dict[str, Tally]:
    site = build_video_site(seed=seed)
    library = ParserLibrary(config)
    tallies = {name: Tally() for name in ("library", "static", "handwritten")}
    for index, path in enumerate(pages):
        version = "v1" if index < before else change
        _, _, body = site.render(path, version=version)
        html = body.decode("utf-8")
        url = BASE + path
        truth = site.truth(path).fields
        hint = library.hint_for(url)
        assert hint is not None, url
        schema = config.by_name(hint.schema)
        assert schema is not None
        names = [spec.name for spec in schema.fields]
        outcome = extract(html, url, schema, hint)
        library.learn(outcome, url)
        _score(tallies["library"], truth, outcome.record, names)
        tallies["library"].tried.append(len(outcome.attempts))
        static = extract(html, url, schema, Hint(schema.name, "static", method="rules"))
        first = static.attempts[0] if static.attempts else None
        static_record = static.record if first is not None and first.method == "rules" else None
        if first is not None and first.method == "rules" and not first.ok:
            static_record = _partial_rules(html, url, schema)
        _score(tallies["static"], truth, static_record, names)
        layout = layout_of(path, version)
        hand_config = _schemas_with_rules(config, layout)
        hand_schema = hand_config.by_name(schema.name)
        assert hand_schema is not None
        method = "structured" if layout == "jsonld_only" else "rules"
        hand = extract(html, url, hand_schema, Hint(schema.name, "hand", method=method))
        _score(tallies["handwritten"], truth, hand.record if hand.method == method else None, names)
    return tallies


def _partial_rules(html: str, url: str, schema: SiteSchema) -> dict[str, object]:
    """What a static parser outputs when some of its rules fail: the fields that still match
    and validate (it has no way to tell the page failed)."""
    tree = lxml.html.document_fromstring(html)
    record: dict[str, object] = {}
    for spec in schema.fields:
        if spec.rule is None:
            continue
        raw = apply_rule(tree, spec.rule, many=spec.validator == "names")
        if raw is None:
            continue
        try:
            record[spec.name] = validate(spec.validator, raw)
        except Invalid:
            continue
    return record


def _recovery(accuracy: list[float], target: float) -> int | None:
    """Pages after the change until a 5-page window reaches ``target`` and the rest of the
    pages average at least ``target``; None if never."""
    for start in range(len(accuracy) - WINDOW + 1):
        window = accuracy[start : start + WINDOW]
        rest = accuracy[start:]
        if statistics.mean(window) >= target and statistics.mean(rest) >= target:
            return start
    return None


def summarise(
    tallies: dict[str, Tally], before: int, change: str, plays: Sequence[bool] = ()
) -> dict[str, object]:
    target = 0.90 if change in ("structural", "ab") else 0.95
    out: dict[str, object] = {}
    for name, tally in tallies.items():
        acc = tally.accuracy
        after = acc[before:]
        play_after = [a for a, p in zip(after, plays[before:], strict=False) if p]
        recovery = _recovery(after, target)
        steady = tally.tried[before + (recovery or 0) + WINDOW :] if tally.tried else []
        out[name] = {
            "before": round(statistics.mean(acc[:before]), 4),
            "first_5_after": round(statistics.mean(after[:WINDOW]), 4),
            "after_5": round(statistics.mean(after[WINDOW:]), 4),
            "pages_to_recover": recovery,
            "silently_wrong": round(tally.wrong_output / tally.output, 4) if tally.output else 0,
            "methods_per_page_steady": round(statistics.mean(steady), 3) if steady else None,
            "methods_per_page_all": round(statistics.mean(tally.tried), 3) if tally.tried else None,
            "play_after": round(statistics.mean(play_after), 4) if play_after else None,
        }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument(
        "--before", type=int, nargs="+", default=[60], help="pages served as v1 first"
    )
    parser.add_argument("--schemas", type=Path, default=HERE / "video.toml")
    parser.add_argument("--changes", nargs="*", default=list(CHANGES))
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--plays-after", action="store_true", help="every detail page before every play page"
    )
    args = parser.parse_args(argv)
    config = load_config(args.schemas)
    started = time.perf_counter()
    runs: list[dict[str, object]] = []
    for seed in args.seeds:
        site = build_video_site(seed=seed)
        pages = [p for p in site.paths() if p.startswith(("/title/", "/play/"))]
        random.Random(seed).shuffle(pages)
        if args.plays_after:
            pages.sort(key=lambda p: p.startswith("/play/"))  # stable: seeded order kept
        plays = [p.startswith("/play/") for p in pages]
        for before in args.before:
            for change in args.changes:
                tallies = _run_change(change, config, pages, before, seed)
                summary = summarise(tallies, before, change, plays)
                runs.append(
                    {
                        "seed": seed,
                        "before": before,
                        "pages": len(pages),
                        "change": change,
                        "systems": summary,
                    }
                )
                print(f"== seed {seed}, {before} pages before, {change}", file=sys.stderr)
                for name, row in summary.items():
                    print(f"  {name:12} {row}", file=sys.stderr)
    _table(runs, args.changes)
    if args.plays_after:
        _play_table(runs, args.changes)
    print(f"\n{len(runs)} runs in {time.perf_counter() - started:.0f} s")
    if args.json is not None:
        args.json.write_text(json.dumps(runs, indent=2), encoding="utf-8")
    return 0


def _table(runs: list[dict[str, object]], changes: Sequence[str]) -> None:
    print(
        "| change | system | before | first 5 after | after those | pages to recover"
        " (median / worst) | silently wrong | methods/page (steady) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for change in changes:
        mine = [r for r in runs if r["change"] == change]
        for system in ("library", "static", "handwritten"):
            rows = [r["systems"][system] for r in mine]  # type: ignore[index]

            def mean(key: str, rows: list[dict[str, object]] = rows) -> str:
                values = [float(r[key]) for r in rows if r[key] is not None]  # type: ignore[arg-type]
                return f"{statistics.mean(values):.3f}" if values else "-"

            recover = [r["pages_to_recover"] for r in rows]
            known = sorted(int(x) for x in recover if x is not None)  # type: ignore[call-overload]
            never = len(recover) - len(known)
            worst = "never" if never else (str(known[-1]) if known else "-")
            median = str(int(statistics.median(known))) if known and not never else worst
            wrong = max(float(r["silently_wrong"]) for r in rows)  # type: ignore[arg-type]
            print(
                f"| {change} | {system} | {mean('before')} | {mean('first_5_after')} |"
                f" {mean('after_5')} | {median} / {worst} | {wrong:.2%} (worst run) |"
                f" {mean('methods_per_page_steady') if system == 'library' else '-'} |"
            )


def _play_table(runs: list[dict[str, object]], changes: Sequence[str]) -> None:
    print("\n| change | system | play pages after the change: field accuracy (mean / worst run) |")
    print("|---|---|---|")
    for change in changes:
        mine = [r for r in runs if r["change"] == change]
        for system in ("library", "static", "handwritten"):
            values = [
                float(r["systems"][system]["play_after"])  # type: ignore[index]
                for r in mine
                if r["systems"][system]["play_after"] is not None  # type: ignore[index]
            ]
            shown = f"{statistics.mean(values):.3f} / {min(values):.3f}" if values else "-"
            print(f"| {change} | {system} | {shown} |")


if __name__ == "__main__":
    sys.exit(main())
