"""Check that parse_body's output is unchanged: a digest per page, compared with a baseline.

Every HTML page of the Java 17 API docs and the Python 3.11 docs (see README.md) is parsed
with :func:`topicrawl.parse.worker.parse_body` as a parse worker gets it: the raw bytes, no
declared charset, the URL the local docs web serves it at. So are deterministic synthetic
pages (tag soup, non-ASCII text, odd hrefs) that reach the corners the docs never do. Each
page's digest hashes every field of the ParsedDocument (title, text, each link's url,
anchor, block, block text and nofollow, lang, canonical, noindex, nofollow, content hash,
encoding) and what :func:`~topicrawl.parse.worker.pack` makes of it, types included; the
fields are also hashed one by one, so a difference says where it is::

    .venv/bin/python benchmarks/parse/check_identical.py --out /tmp/parse-baseline.json
    # ... change the parser ...
    .venv/bin/python benchmarks/parse/check_identical.py --compare /tmp/parse-baseline.json

Pages are parsed in a shuffled order (``--seed``), so cross-page URL caches are exercised in
another order than the baseline's when the seed differs. Exits 1 when any page differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from topicrawl.parse.worker import ParsedDocument, pack, parse_body, unpack

SITES = {
    "java17-api": (Path("/usr/share/doc/openjdk-17-jre-headless/api"), "http://127.0.0.11:8080/"),
    "python311": (Path("/usr/share/doc/python3.11/html"), "http://127.0.0.12:8080/"),
}
FIELDS = (
    "title",
    "text",
    "links",
    "lang",
    "canonical",
    "noindex",
    "nofollow",
    "digest",
    "encoding",
    "packed",
)


def site_pages() -> Iterator[tuple[str, str, bytes]]:
    """(name, url, body) of every page of both doc sites."""
    for site, (root, prefix) in SITES.items():
        if not root.is_dir():
            sys.exit(f"{root} is missing: run `bash /work/shared/bench/docsweb.sh start` first")
        for path in sorted(root.rglob("*.html")):
            rel = path.relative_to(root).as_posix()
            yield f"{site}/{rel}", prefix + rel, path.read_bytes()


_TAGS = (  # noqa: SIM905
    "a area p div ul ol li dl dt dd table tr td nav span b i em code br img script style svg "
    "template noscript iframe title base meta link html head body math wbr select form h1 "
    "section article header footer main menu label sup"
).split()
_HREFS = [
    "/", "a.html", "../b", "../../c/d.html", "?q=1", "#x", "a.html#frag", "a.html #f",
    "//other.example/p", "HTTP://EX.ORG:80/A", "javascript:1", "mailto:x@y", "http://[::1",
    "https://ex.org/%zz?utm_source=1&b=2&a=1", "\x00", " \n/x\t ", "http://a..b/", "./x/./y",
    "https://xn--/", "caf\u00e9.html", "a b.html", "", "#", "x;y", "\\back", "http:rel",
    "https://example.org/dir/page.html", "/p?x=1#y", "%41%42", "a" * 400,
]  # fmt: skip
_ATTRS = [
    ' rel="nofollow"', ' rel="NoFollow x"', ' rel="canonical"', " alt='alt text'",
    ' lang="en-GB"', ' lang="fr_CA"', " xml:lang=de", ' name="robots" content="none"',
    ' name="ROBOTS" content="noindex, nofollow"', ' name="robots" content="nofollow"',
    " title='a title'", " title=''", " alt=''", " hidden", ' class="x"',
]  # fmt: skip
_WORDS = [
    "solar", "POWER", "Straße", "ﬁne", "Ｆｕｌｌ", "café", "cafe\u0301", "İstanbul", "ǅ", "ß",
    "Ω", "ﬀ", "①", "\u00a0", "\u2028", "\u3000", "日本語", "ΣΊΣΥΦΟΣ", "&amp;", "&nbsp;", "&#0;",
    "\ud800", "x\x00y", "\r\n", "\t", "  ", "\u0130", "\u1e9e", "Å", "A\u030a", "\ufeff",
    "´", "a´", "…", "™", "x²", "ſ", "\u212a", "©", "\u0301", "\u09c7\u09be", "\u1100\u1161",
]  # fmt: skip
_PAGE_URLS = [
    "https://example.org/dir/page.html",
    "http://127.0.0.11:8080/java.base/java/lang/String.html",
    "https://EXAMPLE.org:443/a/../b?x#y",
    "",
    "not a url",
]


def synthetic_pages(count: int, seed: int) -> Iterator[tuple[str, str, bytes]]:
    """Deterministic tag soup with the hrefs, attributes and texts the parser treats apart."""
    rng = random.Random(seed)
    for number in range(count):
        tokens: list[str] = []
        for _ in range(rng.randint(1, 120)):
            kind = rng.random()
            if kind < 0.35:
                tag = "a" if rng.random() < 0.3 else rng.choice(_TAGS)
                attrs = "".join(rng.choice(_ATTRS) for _ in range(rng.randint(0, 2)))
                if tag in {"a", "area", "base", "link"} or rng.random() < 0.1:
                    attrs += f' href="{rng.choice(_HREFS)}"'
                tokens.append(f"<{tag}{attrs}>")
            elif kind < 0.55:
                tokens.append(f"</{rng.choice(_TAGS)}>")
            else:
                tokens.append(" ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 6))))
        html = "".join(tokens)
        encoding = rng.choice(["utf-8", "utf-8", "latin-1", "utf-16"])
        body = html.encode(encoding, "surrogatepass" if encoding != "latin-1" else "replace")
        yield f"synthetic/{number}", _PAGE_URLS[number % len(_PAGE_URLS)], body


def digests(doc: ParsedDocument) -> dict[str, str]:
    """A hash of each field of the document and one of the whole (key "all")."""
    page = doc.page
    values: dict[str, object] = {
        "title": page.title,
        "text": page.text,
        "links": [tuple(link) for link in page.links],
        "lang": page.lang,
        "canonical": page.canonical,
        "noindex": page.noindex,
        "nofollow": page.nofollow,
        "digest": doc.digest,
        "encoding": doc.encoding,
        "packed": pack(doc),  # its repr tells plain tuples from links
    }
    out = {name: _hash(repr(values[name]))[:16] for name in FIELDS}
    out["all"] = _hash(repr([values[name] for name in FIELDS]))
    out["types"] = _hash(repr([type(link).__name__ for link in page.links]))[:8]
    return out


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the digests to this JSON file")
    parser.add_argument("--compare", type=Path, help="report pages whose digest differs")
    parser.add_argument("--seed", type=int, default=1, help="order in which pages are parsed")
    parser.add_argument("--synthetic", type=int, default=5000, help="synthetic pages")
    args = parser.parse_args()

    pages = list(site_pages()) + list(synthetic_pages(args.synthetic, seed=7))
    random.Random(args.seed).shuffle(pages)
    result: dict[str, dict[str, str]] = {}
    cpu = 0.0
    for name, url, body in pages:
        start = time.process_time()
        doc = parse_body(body, url)
        cpu += time.process_time() - start
        if unpack(pack(doc)) != doc:
            print(f"{name}: unpack(pack(doc)) != doc")
        result[name] = digests(doc)
    print(f"{len(result)} pages parsed in {cpu:.2f} s of CPU (parse_body only)")
    if args.out:
        args.out.write_text(json.dumps(result, indent=0, sort_keys=True))
    if args.compare:
        baseline: dict[str, dict[str, str]] = json.loads(args.compare.read_text())
        differing = 0
        for name in sorted(baseline.keys() | result.keys()):
            old, new = baseline.get(name), result.get(name)
            if old == new:
                continue
            differing += 1
            if old is None or new is None:
                print(f"{name}: only in {'the new run' if old is None else 'the baseline'}")
            else:
                fields = [key for key in [*FIELDS, "types"] if old.get(key) != new.get(key)]
                print(f"{name}: differs in {', '.join(fields)}")
        print(f"{differing} differing pages of {len(baseline.keys() | result.keys())}")
        sys.exit(1 if differing else 0)


if __name__ == "__main__":
    main()
