"""`topicrawl learn urls`: trains the URL VAE from a crawl's database and saves it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.pages import fetched_page
from topicrawl.cli.app import app
from topicrawl.core.models import Link
from topicrawl.storage import SqlStorage

torch = pytest.importorskip("torch")


@pytest.fixture
async def database(tmp_path: Path) -> Path:
    path = tmp_path / "crawl.db"
    async with SqlStorage(str(path)) as storage:
        for i in range(3):
            links = tuple(Link(f"https://s{i}.org/p/{j}", f"a{j}") for j in range(3))
            await storage.save_page(fetched_page(f"https://s{i}.org/", links=links), run_id=1)
    return path


def test_learn_urls_trains_and_saves_the_model(database: Path, tmp_path: Path) -> None:
    from topicrawl.learn.urlvae import load_url_vae  # noqa: PLC0415

    out = tmp_path / "vae.pt"
    result = CliRunner().invoke(
        app,
        [
            "learn",
            "urls",
            "--db",
            str(database),
            "--out",
            str(out),
            "--epochs",
            "1",
            "--length",
            "24",
            "--latent",
            "2",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "12 URLs" in result.output
    assert "KL per dimension" in result.output
    assert load_url_vae(out).config.latent == 2


def test_a_missing_database_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["learn", "urls", "--db", str(tmp_path / "none.db")])
    assert result.exit_code == 2
    assert not (tmp_path / "none.db").exists()
