"""``topicrawl learn``: train the models of learned scheduling (the optional ``learn`` extra)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from topicrawl.cli.common import err, fail, out, run
from topicrawl.core.errors import ConfigError, TopicrawlError

__all__ = ["app", "crawl_urls"]

app = typer.Typer(
    name="learn",
    help="Train learned-scheduling models (needs the 'learn' extra: torch).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


async def crawl_urls(db: str, *, limit: int, seed: int = 0) -> list[str]:
    """The distinct URLs of a crawl's database (its pages and their links), a uniform sample
    of at most ``limit`` of them (reservoir sampling, so memory stays bounded)."""
    from topicrawl.storage import SqlStorage  # noqa: PLC0415 - slow import

    seen: set[str] = set()
    sample: list[str] = []
    rng = random.Random(seed)
    async with SqlStorage(db, read_only=True) as storage:
        async for page in storage.iter_pages(with_links=True):
            for url in (page.url, *(link.url for link in page.links)):
                if url in seen or len(url) > 8192:
                    continue
                seen.add(url)
                if len(sample) < limit:
                    sample.append(url)
                elif (slot := rng.randrange(len(seen))) < limit:
                    sample[slot] = url
            if len(seen) > 50 * limit:  # enough to sample from; bounds the memory of `seen`
                break
    return sample


@app.command()
def urls(  # noqa: PLR0917 - typer maps each option to a parameter
    db: Annotated[
        str, typer.Option(help="The crawl's database: SQLite file or postgresql:// URL.")
    ],
    out_path: Annotated[
        Path, typer.Option("--out", help="Where the trained model is written.")
    ] = Path("url-vae.pt"),
    limit: Annotated[int, typer.Option(help="URLs sampled from the crawl.", min=1)] = 5000,
    epochs: Annotated[int, typer.Option(help="Passes over the URLs.", min=1)] = 5,
    latent: Annotated[int, typer.Option(help="Dimensions of z.", min=1, max=256)] = 16,
    length: Annotated[
        int, typer.Option(help="Characters per URL ('\\0'-padded).", min=8, max=4096)
    ] = 512,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
) -> None:
    """Train the URL VAE on a crawl's URLs and save it; print the KL of each dimension of z."""
    try:
        from topicrawl.learn.urlvae import (  # noqa: PLC0415 - torch only when asked for
            VaeConfig,
            save_url_vae,
            train_url_vae,
        )
    except ConfigError as exc:
        fail(exc)
    if "://" not in db and not Path(db).is_file():
        fail(ConfigError(f"no database file {db}"))
    found = run(lambda: crawl_urls(db, limit=limit, seed=seed))
    if not found:
        fail(ConfigError(f"the database {db} holds no URLs to learn from"))
    err.print(Text(f"training on {len(found)} URLs"))
    try:
        model, report = train_url_vae(
            found,
            config=VaeConfig(length=length, latent=latent),
            epochs=epochs,
            seed=seed,
            on_epoch=lambda e, loss: err.print(Text(f"epoch {e}: loss {loss:.2f} per URL")),
        )
        save_url_vae(model, out_path, report)
    except (TopicrawlError, OSError) as exc:
        fail(exc if isinstance(exc, TopicrawlError) else ConfigError(f"cannot save: {exc}"))
    kl = " ".join(f"{v:.3f}" for v in report.kl_per_dimension)
    out.print(
        Text(
            f"saved {out_path}: {report.urls} URLs, loss {report.loss:.2f} "
            f"(reconstruction {report.reconstruction:.2f}, KL {report.kl:.2f}) per URL; "
            f"KL per dimension [{kl}]; {report.collapsed} of {latent} dimensions collapsed"
        ),
        soft_wrap=True,
    )
