"""A small hand-made knowledge base for the kg unit tests."""

from __future__ import annotations

import pytest

from topicrawl.kg.kbfile import parse_kb
from topicrawl.kg.model import KnowledgeBase

KB_TEXT = """\
{"id": "li-baiyang", "name": "李白杨", "type": "person", "description": "工程师 软件"}
{"id": "li-bai", "name": "李白", "type": "person", "description": "唐代 诗人 诗歌 长安"}
{"id": "apple-inc", "name": "Apple Inc.", "type": "organisation", \
"aliases": [{"alias": "Apple", "prior": 0.6}, "苹果公司"], \
"description": "technology company iPhone Mac computers software Cupertino"}
{"id": "apple-fruit", "name": "apple", "type": "food", "aliases": [{"alias": "Apple", \
"prior": 0.4}, "苹果"], "description": "fruit tree orchard eat sweet juice harvest"}
{"id": "nolan", "name": "Christopher Nolan", "type": "person", "aliases": ["Nolan", "诺兰"], \
"description": "British film director"}
{"id": "inception", "name": "Inception", "type": "work", "aliases": ["盗梦空间"], \
"description": "science fiction film"}
{"id": "list", "name": "List", "type": "interface", "aliases": ["java.util.List"]}
{"id": "arraylist", "name": "ArrayList", "type": "class", "aliases": ["java.util.ArrayList"]}
{"subject": "inception", "relation": "directed_by", "object": "nolan"}
{"subject": "arraylist", "relation": "implements", "object": "list"}
"""


@pytest.fixture(scope="session")
def kb() -> KnowledgeBase:
    return parse_kb(KB_TEXT, fmt="jsonl")
