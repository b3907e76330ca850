"""The URL VAE on tiny inputs: shapes, the reparameterisation, the loss, training, saving."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from topicrawl.core.errors import ConfigError  # noqa: E402
from topicrawl.learn.urlvae import (  # noqa: E402
    VOCAB,
    UrlVAE,
    VaeConfig,
    encode_urls,
    kl_per_dimension,
    load_url_vae,
    reparameterise,
    save_url_vae,
    train_url_vae,
    url_features,
    vae_loss,
)

TINY = VaeConfig(length=12, embed=4, hidden=8, latent=3)
URLS = [f"http://a{i % 3}.org/{'x' * (i % 5)}" for i in range(12)]


def test_urls_are_cut_or_padded_with_nul_and_non_ascii_becomes_a_question_mark() -> None:
    codes = encode_urls(["ab", "abcdefgh", "é"], length=4)
    assert codes.shape == (3, 4)
    assert codes[0].tolist() == [97, 98, 0, 0]
    assert codes[1].tolist() == [97, 98, 99, 100]
    assert codes[2].tolist() == [ord("?"), 0, 0, 0]
    assert int(codes.max()) < VOCAB


def test_shapes_of_the_encoder_decoder_and_features() -> None:
    torch.manual_seed(0)
    model = UrlVAE(TINY)
    codes = encode_urls(URLS[:5], TINY.length)
    logits, mu, logvar = model(codes)
    assert logits.shape == (5, TINY.length, VOCAB)
    assert mu.shape == logvar.shape == (5, TINY.latent)
    assert url_features(model, URLS[:5]).shape == (5, TINY.latent)
    assert url_features(model, []).shape == (0, TINY.latent)


def test_reparameterisation_is_mu_plus_eps_times_the_standard_deviation() -> None:
    mu = torch.tensor([[1.0, -2.0]])
    logvar = torch.tensor([[0.0, math.log(4.0)]])
    eps = torch.tensor([[0.5, -1.0]])
    assert reparameterise(mu, logvar, eps).tolist() == [[1.5, -4.0]]
    torch.manual_seed(1)
    draws = reparameterise(mu.expand(4000, 2), logvar.expand(4000, 2))
    assert abs(float(draws[:, 1].std()) - 2.0) < 0.1  # sigma = exp(log 4 / 2) = 2
    assert abs(float(draws[:, 0].mean()) - 1.0) < 0.1


def test_the_kl_per_dimension_and_the_categorical_loss_by_hand() -> None:
    mu = torch.tensor([[0.0, 1.0], [0.0, 1.0]])
    logvar = torch.zeros(2, 2)
    # KL(N(mu, 1) || N(0, 1)) = mu^2 / 2
    assert kl_per_dimension(mu, logvar).tolist() == [0.0, 0.5]
    codes = torch.tensor([[1, 2], [3, 0]])
    logits = torch.zeros(2, 2, VOCAB)  # uniform: each character costs ln(VOCAB)
    total, recon, kl = vae_loss(logits, codes, mu, logvar, beta=2.0)
    assert recon.item() == pytest.approx(2 * math.log(VOCAB))  # two characters per URL
    assert kl.item() == pytest.approx(0.5)
    assert total.item() == pytest.approx(2 * math.log(VOCAB) + 2 * 0.5)


def test_training_lowers_the_loss_and_reports_each_dimensions_kl() -> None:
    losses: list[float] = []
    _, report = train_url_vae(
        URLS, config=TINY, epochs=6, batch_size=6, seed=0, on_epoch=lambda _, v: losses.append(v)
    )
    assert len(losses) == 6
    assert losses[-1] < losses[0]
    assert len(report.kl_per_dimension) == TINY.latent
    assert 0 <= report.collapsed <= TINY.latent
    with pytest.raises(ConfigError, match="no URLs"):
        train_url_vae([], config=TINY)


def test_a_saved_model_gives_the_same_features(tmp_path: Path) -> None:
    model, report = train_url_vae(URLS, config=TINY, epochs=1, batch_size=6)
    save_url_vae(model, tmp_path / "vae.pt", report)
    loaded = load_url_vae(tmp_path / "vae.pt")
    assert loaded.config == TINY
    assert (url_features(loaded, URLS) == url_features(model, URLS)).all()
    (tmp_path / "bad.pt").write_bytes(b"not a model")
    with pytest.raises(ConfigError, match="cannot read"):
        load_url_vae(tmp_path / "bad.pt")
    with pytest.raises(ConfigError, match="between 1 and 4096"):
        VaeConfig(latent=0)
