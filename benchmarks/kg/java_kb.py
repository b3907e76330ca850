"""Build a knowledge base from the Java API docs' own structure (the local docs web).

Every class, interface, enum, record and annotation of ``allclasses-index.html`` becomes an
entity (key: its fully qualified name; name: its simple name; aliases: the qualified name;
description: its summary sentence), every package an entity, and each type a ``part_of``
relation to its package; a summary that names another type with a link gives a ``related``
relation. Usage::

    python benchmarks/kg/java_kb.py [--base http://127.0.0.11:8080/] [--out java-kb.jsonl]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import urllib.request
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

_TITLE = re.compile(r"^(class|interface|enum|record|annotation interface|enum class) in (\S+)$")


def build(base: str) -> list[dict[str, object]]:
    """The KB lines (entities, then relations) from the docs at ``base``."""
    with urllib.request.urlopen(base + "allclasses-index.html", timeout=30) as response:
        tree = LexborHTMLParser(response.read().decode("utf-8"))
    entities: dict[str, dict[str, object]] = {}
    relations: list[dict[str, object]] = []
    packages: set[str] = set()
    for first in tree.css("div.col-first"):
        anchor = first.css_first("a")
        if anchor is None:
            continue
        found = _TITLE.match(anchor.attributes.get("title") or "")
        if found is None:
            continue
        kind, package = found.group(1).split(" ")[0], found.group(2)
        simple = anchor.text(strip=True)
        key = f"{package}.{simple}"
        summary_node = first.next
        while summary_node is not None and summary_node.tag != "div":
            summary_node = summary_node.next
        summary = summary_node.text(separator=" ", strip=True) if summary_node else ""
        entities[key] = {
            "id": key,
            "name": simple,
            "type": kind,
            "aliases": [key],
            "description": " ".join(summary.split())[:400],
            "lang": "en",
        }
        packages.add(package)
        relations.append({"subject": key, "relation": "part_of", "object": package})
        if summary_node is not None:
            for link in summary_node.css("a"):
                other = re.match(r"^\w+ in (\S+)$", link.attributes.get("title") or "")
                if other is not None:
                    target = f"{other.group(1)}.{link.text(strip=True)}"
                    if target != key:
                        relations.append({"subject": key, "relation": "related", "object": target})
    # A simple name's prior for each type that has it: how often the index's summaries link
    # to the type (the docs' own anchor counts; java.util.List is linked far more than
    # java.awt.List), plus one, over the most linked type's count plus one.
    cited: dict[str, int] = {}
    for relation in relations:
        if relation["relation"] == "related":
            target = str(relation["object"])
            cited[target] = cited.get(target, 0) + 1
    most = 1 + max(cited.values(), default=0)
    for key, entity in entities.items():
        prior = round((1 + cited.get(key, 0)) / most, 4)
        entity["aliases"] = [{"alias": str(entity["name"]), "prior": prior}, key]
    lines: list[dict[str, object]] = list(entities.values())
    lines += [
        {"id": p, "name": p, "type": "package", "description": f"Java package {p}", "lang": "en"}
        for p in sorted(packages)
    ]
    known = set(entities) | packages
    lines += [r for r in relations if r["object"] in known]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="http://127.0.0.11:8080/")
    parser.add_argument("--out", type=Path, default=Path("java-kb.jsonl"))
    args = parser.parse_args()
    lines = build(args.base)
    with args.out.open("w", encoding="utf-8") as out:
        for line in lines:
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(f"wrote {len(lines)} lines to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
