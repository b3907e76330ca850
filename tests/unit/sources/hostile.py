"""Hostile XML bodies shared by the sources tests."""

from __future__ import annotations

_LAUGHS = "".join(f'<!ENTITY lol{n} "{("&lol" + str(n - 1) + ";") * 10}">\n' for n in range(2, 10))

BILLION_LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE lolz [\n<!ENTITY lol1 "lol">\n'
    + _LAUGHS
    + ']>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
    "<url><loc>http://a.test/&lol9;</loc></url><url><loc>http://a.test/ok</loc></url></urlset>"
).encode()
"""Entity expansion: 10^9 "lol"s (3 GB) from under 1 KB, if the parser expanded it."""


def xxe(path: str, root: str = "urlset") -> bytes:
    """An external entity pointing at a local file, used inside a URL and a title."""
    return (
        f'<?xml version="1.0"?>\n<!DOCTYPE r [<!ENTITY xxe SYSTEM "file://{path}">]>\n'
        f'<{root} xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<url><loc>http://a.test/&xxe;</loc></url>"
        f"<item><title>&xxe;</title><link>http://a.test/&xxe;</link></item></{root}>"
    ).encode()
