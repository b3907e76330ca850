"""User rules: a field's CSS or XPath selector, applied with parsel to the page's lxml tree.

A rule is ``css:SELECTOR`` (parsel's CSS, with ``::text`` and ``::attr(name)``), ``xpath:EXPR``,
or a bare selector (CSS). It yields every matching string; an element match yields its text.
"""

from __future__ import annotations

from functools import lru_cache

from lxml import etree
from lxml.html import HtmlElement
from parsel import Selector
from parsel.csstranslator import HTMLTranslator

from topicrawl.parse.methods.validators import RawValue

__all__ = ["apply_rule", "compile_rule"]

_translator = HTMLTranslator()


@lru_cache(maxsize=1024)
def compile_rule(rule: str) -> str:
    """The XPath expression of a rule.

    Raises:
        ValueError: the selector does not compile (the message says which and why).
    """
    kind, _, expr = (
        rule.partition(":") if rule.startswith(("css:", "xpath:")) else ("css", "", rule)
    )
    expr = expr.strip()
    if not expr:
        raise ValueError(f"empty selector in rule {rule!r}")
    if kind == "css":
        try:
            xpath = str(_translator.css_to_xpath(expr))
        except Exception as exc:  # cssselect raises several unrelated error types
            raise ValueError(f"bad CSS selector {expr!r}: {exc}") from exc
    else:
        xpath = expr
    try:
        etree.XPath(xpath)
    except etree.XPathError as exc:
        raise ValueError(f"bad XPath {xpath!r}: {exc}") from exc
    return xpath


def apply_rule(tree: HtmlElement, rule: str, *, many: bool) -> RawValue | None:
    """What ``rule`` selects in ``tree``: every match when ``many``, else the first; None when
    nothing non-blank matched."""
    selector = Selector(root=tree, type="html")
    found: list[str] = []
    for match in selector.xpath(compile_rule(rule)):
        root = match.root
        text = root.text_content() if isinstance(root, HtmlElement) else str(match.get())
        text = " ".join(text.split())
        if text:
            found.append(text)
            if not many:
                break
    if not found:
        return None
    return found if many else found[0]
