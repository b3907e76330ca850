"""A small knowledge base of the demo web's own names, for `topicrawl kg load`.

Every named thing of the demo vocabularies (people, places, organisations, works; English and
Chinese) is an entity of its topic, and each topic an entity too: the names are ``part_of``
their topic, so a preferred name's neighbours (radius 2) are its topic and the topic's other
names. The demo web's ground truth of which page names what is its own text
(:attr:`topicrawl.demoweb.model.DemoPage.text`).
"""

from __future__ import annotations

import json

from topicrawl.demoweb.text import TOPICS

__all__ = ["demo_kb_jsonl"]


def _key(name: str) -> str:
    return "demo:" + "-".join(name.lower().split())


def demo_kb_jsonl() -> str:
    """The demo web's knowledge base as KB-file JSONL (entities, then relations)."""
    lines: list[dict[str, object]] = []
    relations: list[dict[str, object]] = []
    seen: set[str] = set()
    for topic in TOPICS:
        topic_key = f"demo-topic:{topic.id}"
        lines.append(
            {
                "id": topic_key,
                "name": topic.name_en,
                "type": "topic",
                "aliases": [topic.name_zh],
                "description": " ".join((*topic.en.nouns, *topic.zh.nouns)),
            }
        )
        for lang, vocabulary in (("en", topic.en), ("zh", topic.zh)):
            for name in vocabulary.entities:
                bare = name.removeprefix("the ")
                key = _key(bare)
                if key in seen:
                    continue
                seen.add(key)
                lines.append(
                    {
                        "id": key,
                        "name": bare,
                        "type": "other",
                        "description": " ".join(vocabulary.nouns),
                        "lang": lang,
                    }
                )
                relations.append({"subject": key, "relation": "part_of", "object": topic_key})
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines + relations)
