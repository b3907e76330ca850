from __future__ import annotations

from tests.snippets import run_snippet


def test_settling_the_heap_freezes_what_exists_and_collects_the_young_less_often() -> None:
    # In a fresh interpreter: the test process's own collector is left alone.
    code = (
        "import gc\n"
        "from topicrawl.engine.heap import settle_heap\n"
        "before = gc.get_threshold()\n"
        "kept = [object() for _ in range(1000)]\n"
        "settle_heap()\n"
        "print(before, gc.get_threshold(), gc.get_freeze_count() > 1000)\n"
    )
    out = run_snippet(code)
    assert out.split(")")[:2] == ["(700, 10, 10", " (20000, 20, 20"]
    assert out.strip().endswith("True")
