"""``topicrawl seeds``: seeds for a topic from a meta-search engine (SearXNG's JSON API)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from topicrawl.cli.common import EXIT_MISSING, err, out, run

if TYPE_CHECKING:
    from topicrawl.sources.metasearch import SeedProposal

__all__ = ["app", "find_seeds"]

app = typer.Typer(
    name="seeds",
    help="Seeds for a topic from meta-search (SearXNG), ranked by reciprocal rank fusion.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

SearxOption = Annotated[
    str | None,
    typer.Option(
        "--searx", help="A SearXNG instance with the JSON format on, e.g. http://127.0.0.1:8888/"
    ),
]


async def find_seeds(
    searx: str, query: str, *, limit: int, pages: int = 1, language: str | None = None
) -> list[SeedProposal]:
    """The best ``limit`` seeds SearXNG at ``searx`` finds for ``query``.

    Raises:
        FetchError: the instance failed, refused, rate-limited or answered nonsense.
        ValueError: bad arguments (an empty query, limit or pages under 1, a bad URL).
    """
    from topicrawl.sources.metasearch import SearxClient  # noqa: PLC0415 - keeps --help fast

    async with SearxClient(searx) as client:
        return await client.seeds(query, limit=limit, pages=pages, language=language)


def checked_searx(searx: str | None, what: str) -> str:
    """The --searx URL, or exit 2 saying that ``what`` needs one."""
    if not searx or not searx.startswith(("http://", "https://")):
        err.print(f"[red]error:[/red] {what} needs --searx http(s)://YOUR-SEARXNG/")
        raise typer.Exit(2)
    return searx


def search_or_exit(
    searx: str, query: str, *, limit: int, pages: int = 1, language: str | None = None
) -> list[SeedProposal]:
    """:func:`find_seeds`, bad arguments exiting 2 and search failures 1 with the message."""
    try:
        return run(lambda: find_seeds(searx, query, limit=limit, pages=pages, language=language))
    except ValueError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from exc


@app.command()
def find(  # noqa: PLR0917 - typer maps each option to a parameter
    topic: Annotated[
        list[str], typer.Option("--topic", help="Topic keywords (repeatable; joined as one query).")
    ],
    searx: SearxOption = None,
    limit: Annotated[int, typer.Option(help="Seeds to propose.")] = 20,
    pages: Annotated[int, typer.Option(help="Result pages to read from the instance.")] = 1,
    language: Annotated[str | None, typer.Option(help="SearXNG language, e.g. en.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per seed.")] = False,
) -> None:
    """Propose seeds for a topic: the instance's results fused by rank across its engines."""
    url = checked_searx(searx, "seeds find")
    query = " ".join(t.strip() for t in topic if t.strip())
    proposals = search_or_exit(url, query, limit=limit, pages=pages, language=language)
    if not proposals:
        err.print(f"no results for {query!r}")
        raise typer.Exit(EXIT_MISSING)
    if as_json:
        for p in proposals:
            line = {"url": p.url, "score": round(p.score, 6), "engines": list(p.engines)}
            line |= {"positions": list(p.positions), "title": p.title}
            typer.echo(json.dumps(line, ensure_ascii=False))
        return
    table = Table(title=f"seeds for {query!r}", title_justify="left")
    for column in ("#", "score", "engines", "URL", "title"):
        table.add_column(column, overflow="fold")
    for rank, p in enumerate(proposals, start=1):
        engines = ", ".join(f"{e}" for e in p.engines)
        table.add_row(str(rank), f"{p.score:.4f}", engines, escape(p.url), escape(p.title))
    out.print(table)
