"""The knowledge graph (capability C11): recognise entities in pages, link them to a local
knowledge base, read relations, index entities and relations to URLs, prefer entities.

Modules: :mod:`~topicrawl.kg.model` (values), :mod:`~topicrawl.kg.kbfile` (KB files),
:mod:`~topicrawl.kg.recognise`, :mod:`~topicrawl.kg.link`, :mod:`~topicrawl.kg.relations`,
:mod:`~topicrawl.kg.analyse` (what the parse workers run), :mod:`~topicrawl.kg.preference`
(the strategy wrapper), :mod:`~topicrawl.kg.store` (the database tables) and
:mod:`~topicrawl.kg.views` (snapshot, exports). Nothing is imported here: a parse worker that
unpickles the analyzer imports this package, and must not pay for the database layer.
"""
