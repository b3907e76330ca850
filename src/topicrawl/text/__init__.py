"""The text layer: tokenisation (English, Chinese via jieba), stopwords, TF-IDF vectors."""

from __future__ import annotations

from topicrawl.text.stopwords import all_stopwords, stopwords
from topicrawl.text.tokenize import Tokenizer, chinese_segmenter, light_stem, normalize_text
from topicrawl.text.vectors import (
    OOV,
    SparseVector,
    TfidfModel,
    Vocabulary,
    centroid,
    combine,
    cosine,
    dot,
    norm,
    normalized,
)

__all__ = [
    "OOV",
    "SparseVector",
    "TfidfModel",
    "Tokenizer",
    "Vocabulary",
    "all_stopwords",
    "centroid",
    "chinese_segmenter",
    "combine",
    "cosine",
    "dot",
    "light_stem",
    "norm",
    "normalize_text",
    "normalized",
    "stopwords",
]
