"""The demo web's own knowledge base: it loads, and its names are the demo pages' names."""

from __future__ import annotations

from topicrawl.demoweb import DemoWeb
from topicrawl.demoweb.kb import demo_kb_jsonl
from topicrawl.kg.kbfile import parse_kb


def test_the_demo_kb_loads_and_relates_each_name_to_its_topic() -> None:
    kb = parse_kb(demo_kb_jsonl(), fmt="jsonl")
    [julia] = kb.find("Julia Child")
    near = kb.within([julia.key], 2)
    assert near["demo-topic:cooking"] == 1
    assert near[kb.find("Michelin Guide")[0].key] == 2
    assert "demo-topic:astronomy" not in near
    assert kb.find("烹饪")[0].key == "demo-topic:cooking"


def test_the_demo_pages_name_the_kb_entities() -> None:
    kb = parse_kb(demo_kb_jsonl(), fmt="jsonl")
    web = DemoWeb.generate(seed=11, hosts=4, pages_per_host=25)
    text = "\n".join(page.text for page in web.pages if page.is_document)
    named = [e.name for e in kb.entities if e.type != "topic" and e.name in text]
    assert len(named) >= 0.8 * sum(1 for e in kb.entities if e.type != "topic")
