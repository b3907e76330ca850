"""A demo-web host built as a single-page app: its pages and links exist only after its script
runs.

Every document of such a host is served as the same script shell (an empty ``<div id="app">``,
a ``<noscript>`` hint, one script); the script, served by the host itself at
:data:`SCRIPT_PATH`, asks :data:`DATA_PATH` for the page's content (title and the body the
host would otherwise have served, links and all) and builds the DOM. A crawler that does not
run scripts sees no text and no links on this host.
"""

from __future__ import annotations

import html
import json
import re

from topicrawl.demoweb.graph import DemoWeb
from topicrawl.demoweb.model import DemoPage
from topicrawl.demoweb.render import render_document

__all__ = ["DATA_PATH", "SCRIPT_PATH", "app_script", "page_data", "shell"]

SCRIPT_PATH = "/_spa/app.js"
DATA_PATH = "/_spa/page.json"

_BODY = re.compile(r"<body[^>]*>(.*)</body>", re.DOTALL | re.IGNORECASE)

_SCRIPT = """\
"use strict";
(async () => {
  const app = document.getElementById("app");
  const path = location.pathname;
  const answer = await fetch("%(data)s?path=" + encodeURIComponent(path));
  if (!answer.ok) {
    app.textContent = "Not found";
    return;
  }
  const page = await answer.json();
  document.title = page.title;
  document.documentElement.lang = page.lang;
  // The content is this site's own markup (the demo web's), not user input.
  app.innerHTML = page.body;
})();
"""


def shell(page: DemoPage) -> bytes:
    """The script shell served at every document path of a single-page-app host."""
    lang = html.escape(page.lang or "en")
    return (
        f'<!DOCTYPE html>\n<html lang="{lang}">\n<head><meta charset="utf-8">'
        f'<title>Loading...</title><script src="{SCRIPT_PATH}" defer></script></head>\n'
        '<body><div id="app"></div>'
        "<noscript>This site needs JavaScript: please enable JavaScript.</noscript>"
        "</body>\n</html>\n"
    ).encode()


def app_script() -> bytes:
    """The host's application script."""
    return (_SCRIPT % {"data": DATA_PATH}).encode()


def page_data(web: DemoWeb, page: DemoPage) -> bytes:
    """The JSON the script builds ``page`` from: title, language and body markup."""
    document = render_document(web, page).decode(page.encoding, "replace")
    match = _BODY.search(document)
    site = web.host(page.host).name
    return json.dumps(
        {
            "title": f"{page.title} | {site}",
            "lang": page.lang or "en",
            "body": match.group(1) if match else "",
        },
        ensure_ascii=False,
    ).encode()
