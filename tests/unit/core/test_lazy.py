from __future__ import annotations

from pathlib import Path

from tests.snippets import run_snippet
from topicrawl.core.lazy import LazyModule


def test_a_lazy_module_imports_on_first_attribute_read() -> None:
    code = (
        "import sys\n"
        "from topicrawl.core.lazy import LazyModule\n"
        "m = LazyModule('colorsys')\n"
        "before = 'colorsys' in sys.modules\n"
        "value = m.rgb_to_hsv(1.0, 0.0, 0.0)\n"
        "print(before, 'colorsys' in sys.modules, value)\n"
    )
    out = run_snippet(code)
    assert out.split() == ["False", "True", "(0.0,", "1.0,", "1.0)"]


def test_a_lazy_module_says_whether_it_was_imported() -> None:
    lazy = LazyModule("json")
    assert "not imported yet" in repr(lazy)
    assert lazy.dumps([1]) == "[1]"
    assert "imported" in repr(lazy)
    assert "not" not in repr(lazy)


def test_a_breadth_first_crawl_does_not_load_numpy(tmp_path: Path) -> None:
    # numpy is ~20 MB of the crawler's ~80 MB after imports: only the focused strategy's
    # topic update and the in-memory exact store may load it.
    code = (
        "import asyncio, sys, topicrawl.cli.app, topicrawl.engine\n"
        "from topicrawl.focus import make_strategy\n"
        "from topicrawl.frontier import SqliteFrontier\n"
        "from topicrawl.core.models import Request\n"
        "make_strategy('bfs', topics=())\n"
        "async def main():\n"
        f"    async with SqliteFrontier({str(tmp_path / 'f.db')!r}) as frontier:\n"
        "        await frontier.push([Request(url='http://a.test/', score=1.0)])\n"
        "        lease = await frontier.pop()\n"
        "        await frontier.ack(lease)\n"
        "        print(frontier.known(['http://a.test/', 'http://a.test/b']))\n"
        "asyncio.run(main())\n"
        "print('numpy' in sys.modules)\n"
    )
    out = run_snippet(code)
    assert out.split("\n")[:2] == ["[True, False]", "False"]
