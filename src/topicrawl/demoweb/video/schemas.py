"""The demo video site's schemas for the parser library, for any host it is served on.

The same fields as ``benchmarks/parsers/video.toml`` (written against template ``v1``), plus
the detail page's type (film or TV series), which seed 004's system reads; ``topicrawl video
run --demo`` writes them for the demo's address.
"""

from __future__ import annotations

__all__ = ["DETAIL_SCHEMA", "demo_schemas"]

DETAIL_SCHEMA = "video-detail"

_SCHEMAS = """\
[[schemas]]
name = "video-detail"
domains = ["{host}"]
paths = ["^/title/"]

[schemas.fields.title]
validator = "text"
required = true
structured = ["name"]
rule = "css:h1.title::text"

[schemas.fields.type]
validator = "text"
structured = ["@type"]
rule = "css:span.type::text"

[schemas.fields.directors]
validator = "names"
required = true
structured = ["director.name"]
rule = "css:p.directors a::text"

[schemas.fields.actors]
validator = "names"
required = true
structured = ["actor.name"]
rule = "css:p.actors a::text"

[schemas.fields.plays]
validator = "count"
required = true
structured = ["interactionStatistic[interactionType=WatchAction].userInteractionCount"]
rule = "css:li.plays b::text"

[schemas.fields.comments]
validator = "count"
required = true
structured = ["interactionStatistic[interactionType=CommentAction].userInteractionCount"]
rule = "css:li.comments b::text"

[schemas.fields.favourites]
validator = "count"
required = true
structured = ["interactionStatistic[interactionType=LikeAction].userInteractionCount"]
rule = "css:li.favourites b::text"

[[schemas]]
name = "video-play"
domains = ["{host}"]
paths = ["^/play/"]

[schemas.fields.title]
validator = "text"
required = true
structured = ["partOfSeries.name", "name"]
rule = "css:h1.video-title::text"

[schemas.fields.plays]
validator = "count"
required = true
structured = ["interactionStatistic[interactionType=WatchAction].userInteractionCount"]
rule = "css:span.play-count::text"
"""


def demo_schemas(host: str) -> str:
    """The schemas' TOML text for the demo site served on ``host`` (a name or address).

    Raises:
        ValueError: ``host`` holds a character that could break out of a TOML string.
    """
    if not host or any(c in host for c in '"\\\n\r'):
        raise ValueError(f"not a host name: {host!r}")
    return _SCHEMAS.format(host=host)
