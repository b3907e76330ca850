"""The knowledge base's values: entities with their aliases, relations, and the KB as a graph."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = [
    "FOUND",
    "LOADED",
    "Alias",
    "Entity",
    "KnowledgeBase",
    "Relation",
    "found_key",
]

LOADED = "loaded"
"""Origin of an entity or relation that came from a user's KB file."""
FOUND = "found"
"""Origin of an entity the crawl recognised and could not link to a known one."""


def found_key(entity_type: str, name: str) -> str:
    """The key of a found entity: one per type and (case-folded) name."""
    return f"found:{entity_type}:{name.casefold()}"


@dataclass(frozen=True, slots=True)
class Alias:
    """A name an entity goes by; ``prior`` weighs how often the name means this entity (0-1]."""

    text: str
    prior: float = 1.0


@dataclass(frozen=True, slots=True)
class Entity:
    """One entity of the knowledge base; ``key`` names it across loads and crawls."""

    key: str
    name: str
    type: str
    aliases: tuple[Alias, ...] = ()
    description: str = ""
    lang: str | None = None
    origin: str = LOADED

    def all_names(self) -> tuple[Alias, ...]:
        """The aliases, with the canonical name first (prior 1 unless an alias says else)."""
        listed = {alias.text: alias for alias in self.aliases}
        head = listed.pop(self.name, Alias(self.name, 1.0))
        return (head, *listed.values())


@dataclass(frozen=True, slots=True)
class Relation:
    """A typed, directed edge between two entities (by key), with how sure it is and its source."""

    subject: str
    type: str
    object: str
    confidence: float = 1.0
    provenance: str = LOADED


@dataclass(frozen=True)  # no slots: pickled by hand, without its derived lookups
class KnowledgeBase:
    """Entities and relations, with the lookups recognition, linking and preference need."""

    entities: tuple[Entity, ...] = ()
    relations: tuple[Relation, ...] = ()
    _by_key: Mapping[str, Entity] = field(init=False, repr=False, compare=False)
    _adjacent: Mapping[str, frozenset[str]] = field(init=False, repr=False, compare=False)
    _between: Mapping[frozenset[str], tuple[Relation, ...]] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        by_key = {entity.key: entity for entity in self.entities}
        adjacent: dict[str, set[str]] = {}
        between: dict[frozenset[str], list[Relation]] = {}
        for relation in self.relations:
            if relation.subject in by_key and relation.object in by_key:
                adjacent.setdefault(relation.subject, set()).add(relation.object)
                adjacent.setdefault(relation.object, set()).add(relation.subject)
                pair = frozenset((relation.subject, relation.object))
                between.setdefault(pair, []).append(relation)
        object.__setattr__(self, "_by_key", MappingProxyType(by_key))
        object.__setattr__(
            self, "_between", MappingProxyType({k: tuple(v) for k, v in between.items()})
        )
        object.__setattr__(
            self,
            "_adjacent",
            MappingProxyType({key: frozenset(found) for key, found in adjacent.items()}),
        )

    def __getstate__(self) -> tuple[tuple[Entity, ...], tuple[Relation, ...]]:
        return self.entities, self.relations

    def __setstate__(self, state: tuple[tuple[Entity, ...], tuple[Relation, ...]]) -> None:
        object.__setattr__(self, "entities", state[0])
        object.__setattr__(self, "relations", state[1])
        self.__post_init__()

    def get(self, key: str) -> Entity | None:
        """The entity with this key, if the KB has it."""
        return self._by_key.get(key)

    def neighbours(self, key: str) -> frozenset[str]:
        """Keys of the entities one relation away (either direction)."""
        return self._adjacent.get(key, frozenset())

    def relations_between(self, one: str, other: str) -> tuple[Relation, ...]:
        """The relations joining two entities, in either direction."""
        return self._between.get(frozenset((one, other)), ())

    def within(self, keys: Iterable[str], radius: int) -> dict[str, int]:
        """Every entity at most ``radius`` relations from one of ``keys``, with its distance."""
        distance: dict[str, int] = {}
        queue: deque[str] = deque()
        for key in keys:
            if key in self._by_key and key not in distance:
                distance[key] = 0
                queue.append(key)
        while queue:
            key = queue.popleft()
            if distance[key] >= radius:
                continue
            for near in self.neighbours(key):
                if near not in distance:
                    distance[near] = distance[key] + 1
                    queue.append(near)
        return distance

    def find(self, name: str) -> list[Entity]:
        """Entities whose key, name or an alias is ``name`` (case-folded), keys first."""
        if name in self._by_key:
            return [self._by_key[name]]
        wanted = name.casefold()
        return [
            entity
            for entity in self.entities
            if any(alias.text.casefold() == wanted for alias in entity.all_names())
        ]
