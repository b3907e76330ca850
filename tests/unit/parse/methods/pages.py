"""Hand-made film pages in several templates, for the parser library's tests."""

from __future__ import annotations

import json

FILM = {
    "title": "The Quiet Harbour",
    "director": "Ana Lima",
    "actors": ["Rui Costa", "Mei Chen", "John Hart"],
    "plays": 1_234_000,
    "comments": 3400,
    "date": "2021-05-04",
}


def page(template: str, film: dict[str, object] = FILM, *, shown_plays: str = "1.2M") -> str:
    """A film detail page in ``template``: v1, cosmetic (classes renamed), structural
    (markup moved into a list), jsonld (data only in JSON-LD)."""
    actors = film["actors"]
    assert isinstance(actors, list)
    title, director = film["title"], film["director"]
    head = f"<title>{title} - Films</title>"
    nav = "<nav><a href='/'>Home</a> <a href='/films'>Films</a></nav>"
    if template == "v1":
        body = (
            f"<div class='film'><h1 class='film-title'>{title}</h1>"
            f"<p class='meta'><span class='label'>Director:</span>"
            f"<span class='director'>{director}</span></p>"
            f"<ul class='actors'>{''.join(f'<li>{a}</li>' for a in actors)}</ul>"
            f"<div class='stats'><span class='label'>Plays</span>"
            f"<span class='plays'>{shown_plays}</span>"
            f"<span class='label'>Comments</span><span class='comments'>3,400</span></div></div>"
        )
    elif template == "cosmetic":
        body = (
            f"<div class='movie'><h1 class='movie-name'>{title}</h1>"
            f"<p class='info'><span class='label'>Director:</span>"
            f"<span class='dir'>{director}</span></p>"
            f"<ul class='cast'>{''.join(f'<li>{a}</li>' for a in actors)}</ul>"
            f"<div class='numbers'><span class='label'>Plays</span>"
            f"<span class='play-count'>{shown_plays}</span>"
            f"<span class='label'>Comments</span><span class='cmt'>3,400</span></div></div>"
        )
    elif template == "jsonld":
        data = {
            "@context": "https://schema.org",
            "@type": "Movie",
            "name": title,
            "director": {"@type": "Person", "name": director},
            "actor": [{"@type": "Person", "name": a} for a in actors],
            "interactionStatistic": [
                {
                    "@type": "InteractionCounter",
                    "interactionType": "https://schema.org/WatchAction",
                    "userInteractionCount": film["plays"],
                },
                {
                    "@type": "InteractionCounter",
                    "interactionType": "https://schema.org/CommentAction",
                    "userInteractionCount": film["comments"],
                },
            ],
        }
        head += f"<script type='application/ld+json'>{json.dumps(data)}</script>"
        body = f"<div id='app'><h2>{title}</h2><p>Loading player...</p></div>"
    else:
        raise ValueError(template)
    return f"<html><head>{head}</head><body>{nav}<main>{body}</main></body></html>"


SCHEMA_TOML = """
[[schemas]]
name = "film"
domains = ["filmsite.com"]
paths = ["^/film/"]

[schemas.fields.title]
validator = "text"
required = true
structured = ["name"]
rule = "css:h1.film-title::text"

[schemas.fields.director]
validator = "names"
structured = ["director.name"]
rule = "css:.director::text"

[schemas.fields.actors]
validator = "names"
structured = ["actor.name"]
rule = "css:ul.actors li::text"

[schemas.fields.plays]
validator = "count"
required = true
structured = ["interactionStatistic[interactionType=WatchAction].userInteractionCount"]
rule = "css:.plays::text"
"""
