"""URL distillation: a character RNN with a variational bottleneck whose code is a URL feature.

A URL is cut or padded with ``'\\0'`` to :data:`URL_LENGTH` characters (non-ASCII characters
become ``'?'``). A GRU reads it; two fully connected layers give ``mu`` and ``logvar``; the
code is ``z = mu + eps * exp(logvar / 2)`` with ``eps ~ N(0, I)`` (the reparameterisation
trick). A second GRU, started from ``z`` and given ``z`` at every step (teacher forcing on
the previous character), reconstructs the URL.

Loss: the **categorical** cross-entropy of every character (padding included, as the seed
does) summed over the positions, plus ``beta`` times the KL divergence of ``N(mu, sigma)``
from ``N(0, I)``, both averaged over the batch. The seed's binary cross-entropy over one-hot
characters is replaced by its categorical equivalent (one softmax over the 128 characters
per position). ``beta`` rises from 0 to its value over the first epoch (KL warm-up) so the
decoder does not learn to ignore ``z`` at once; :func:`kl_per_dimension` says whether it did
anyway (a dimension whose mean KL is near 0 carries nothing: it collapsed).

The feature of a URL is ``mu`` (no sampling at inference); the feature of a host is the mean
``mu`` of some of its URLs.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from topicrawl.core.errors import ConfigError
from topicrawl.learn._torch import load_saved, require_torch

require_torch()  # a clear error when the learn extra is missing, before the imports below

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402 - torch's own convention

__all__ = [
    "URL_LENGTH",
    "VOCAB",
    "TrainReport",
    "UrlVAE",
    "VaeConfig",
    "encode_urls",
    "kl_per_dimension",
    "load_url_vae",
    "reparameterise",
    "save_url_vae",
    "train_url_vae",
    "url_features",
    "vae_loss",
]

URL_LENGTH = 512
VOCAB = 128  # ASCII; '\0' is the padding
_MAX_URLS = 1_000_000
_COLLAPSED = 0.01  # nats: a dimension with less mean KL than this carries nothing


@dataclass(frozen=True, slots=True, kw_only=True)
class VaeConfig:
    """The shape of a URL VAE."""

    length: int = URL_LENGTH
    embed: int = 16
    hidden: int = 64
    latent: int = 16

    def __post_init__(self) -> None:
        for name in ("length", "embed", "hidden", "latent"):
            value = getattr(self, name)
            if not 1 <= value <= 4096:
                raise ConfigError(f"{name} must be between 1 and 4096, got {value}")


def encode_urls(urls: Sequence[str], length: int = URL_LENGTH) -> torch.Tensor:
    """URLs as character codes, shape ``(len(urls), length)``: cut, or padded with 0."""
    out = torch.zeros((len(urls), length), dtype=torch.long)
    for i, url in enumerate(urls):
        codes = [c if c < VOCAB else ord("?") for c in url[:length].encode("ascii", "replace")]
        if codes:
            out[i, : len(codes)] = torch.tensor(codes, dtype=torch.long)
    return out


def reparameterise(
    mu: torch.Tensor, logvar: torch.Tensor, eps: torch.Tensor | None = None
) -> torch.Tensor:
    """``mu + eps * exp(logvar / 2)``; ``eps`` drawn from N(0, I) unless given."""
    if eps is None:
        eps = torch.randn_like(mu)
    return mu + eps * torch.exp(0.5 * logvar)


class UrlVAE(nn.Module):
    """The character VAE (see the module docstring)."""

    def __init__(self, config: VaeConfig | None = None) -> None:
        super().__init__()
        self.config = config or VaeConfig()
        c = self.config
        self.embed = nn.Embedding(VOCAB, c.embed)
        self.encoder = nn.GRU(c.embed, c.hidden, batch_first=True)
        self.fc_mu = nn.Linear(c.hidden, c.latent)
        self.fc_logvar = nn.Linear(c.hidden, c.latent)
        self.fc_start = nn.Linear(c.latent, c.hidden)
        self.decoder = nn.GRU(c.embed + c.latent, c.hidden, batch_first=True)
        self.out = nn.Linear(c.hidden, VOCAB)

    def encode(self, codes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mu, logvar)``, each ``(batch, latent)``, of character codes ``(batch, length)``."""
        _, last = self.encoder(self.embed(codes))
        hidden = last[-1]
        return self.fc_mu(hidden), self.fc_logvar(hidden)

    def decode(self, z: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
        """Logits ``(batch, length, VOCAB)`` of each character given ``z`` and the ones before."""
        previous = F.pad(codes[:, :-1], (1, 0))  # teacher forcing: shift right, start with 0
        steps = codes.shape[1]
        inputs = torch.cat([self.embed(previous), z.unsqueeze(1).expand(-1, steps, -1)], dim=2)
        start = torch.tanh(self.fc_start(z)).unsqueeze(0)
        output, _ = self.decoder(inputs, start)
        logits: torch.Tensor = self.out(output)
        return logits

    def forward(self, codes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(logits, mu, logvar)`` of a batch, ``z`` sampled by :func:`reparameterise`."""
        mu, logvar = self.encode(codes)
        return self.decode(reparameterise(mu, logvar), codes), mu, logvar


def vae_loss(
    logits: torch.Tensor,
    codes: torch.Tensor,
    mu: torch.Tensor,
    logvar: torch.Tensor,
    *,
    beta: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(total, reconstruction, kl)``, each averaged over the batch (see the module docstring)."""
    batch = codes.shape[0]
    recon = F.cross_entropy(logits.reshape(-1, VOCAB), codes.reshape(-1), reduction="sum") / batch
    kl = kl_per_dimension(mu, logvar).sum()
    return recon + beta * kl, recon, kl


def kl_per_dimension(mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    """The mean over the batch of each dimension's KL(N(mu, sigma) || N(0, 1)), in nats."""
    return (-0.5 * (1 + logvar - mu.pow(2) - logvar.exp())).mean(dim=0)


@dataclass(frozen=True, slots=True)
class TrainReport:
    """What training did: the last epoch's mean loss terms per URL, each latent dimension's
    mean KL on the training URLs, and how many of them collapsed (KL under 0.01 nats)."""

    urls: int
    epochs: int
    loss: float
    reconstruction: float
    kl: float
    kl_per_dimension: list[float] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def collapsed(self) -> int:
        """Dimensions that carry (almost) nothing."""
        return sum(1 for value in self.kl_per_dimension if value < _COLLAPSED)


def train_url_vae(
    urls: Sequence[str],
    *,
    config: VaeConfig | None = None,
    epochs: int = 5,
    batch_size: int = 32,
    learning_rate: float = 3e-3,
    beta: float = 1.0,
    seed: int = 0,
    on_epoch: Callable[[int, float], None] | None = None,
) -> tuple[UrlVAE, TrainReport]:
    """Train a URL VAE on ``urls`` (Adam, KL warm-up over the first epoch).

    Raises:
        ConfigError: no URLs, too many, or a bad knob.
    """
    import time  # noqa: PLC0415 - only training measures its time

    if not urls:
        raise ConfigError("no URLs to train the URL model on")
    if len(urls) > _MAX_URLS:
        raise ConfigError(f"{len(urls)} URLs; at most {_MAX_URLS} (sample them)")
    if epochs < 1 or batch_size < 1 or not learning_rate > 0 or not beta >= 0:
        raise ConfigError("epochs and batch_size must be >= 1, learning_rate > 0, beta >= 0")
    started = time.perf_counter()
    torch.manual_seed(seed)
    order = list(range(len(urls)))
    shuffle = random.Random(seed)
    model = UrlVAE(config)
    codes = encode_urls(urls, model.config.length)
    optimiser = torch.optim.Adam(model.parameters(), lr=learning_rate)
    batches = math.ceil(len(urls) / batch_size)
    totals = (0.0, 0.0, 0.0)
    for epoch in range(epochs):
        shuffle.shuffle(order)
        totals = (0.0, 0.0, 0.0)
        model.train()
        for b in range(batches):
            batch = codes[order[b * batch_size : (b + 1) * batch_size]]
            warm = min(1.0, (epoch * batches + b + 1) / batches)
            logits, mu, logvar = model(batch)
            loss, recon, kl = vae_loss(logits, batch, mu, logvar, beta=beta * warm)
            optimiser.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimiser.step()
            n = batch.shape[0]
            totals = (
                totals[0] + loss.item() * n,
                totals[1] + recon.item() * n,
                totals[2] + kl.item() * n,
            )
        if on_epoch is not None:
            on_epoch(epoch + 1, totals[0] / len(urls))
    per_dim = _kl_on(model, codes)
    report = TrainReport(
        urls=len(urls),
        epochs=epochs,
        loss=totals[0] / len(urls),
        reconstruction=totals[1] / len(urls),
        kl=totals[2] / len(urls),
        kl_per_dimension=per_dim,
        seconds=time.perf_counter() - started,
    )
    return model, report


def _kl_on(model: UrlVAE, codes: torch.Tensor, batch_size: int = 256) -> list[float]:
    model.eval()
    with torch.inference_mode():
        parts = [model.encode(codes[i : i + batch_size]) for i in range(0, len(codes), batch_size)]
        mu = torch.cat([p[0] for p in parts])
        logvar = torch.cat([p[1] for p in parts])
        return [float(v) for v in kl_per_dimension(mu, logvar)]


def url_features(model: UrlVAE, urls: Sequence[str], batch_size: int = 256) -> np.ndarray:
    """Each URL's feature (its ``mu``), shape ``(len(urls), latent)``."""
    model.eval()
    codes = encode_urls(urls, model.config.length)
    rows = []
    with torch.inference_mode():
        for i in range(0, len(codes), batch_size):
            rows.append(model.encode(codes[i : i + batch_size])[0].numpy())
    if not rows:
        return np.zeros((0, model.config.latent), dtype=np.float32)
    return np.concatenate(rows).astype(np.float32)


def save_url_vae(model: UrlVAE, path: Path, report: TrainReport | None = None) -> None:
    """Write the model (its shape, weights and training report) to ``path``."""
    torch.save(
        {
            "kind": "topicrawl-url-vae",
            "config": asdict(model.config),
            "state": model.state_dict(),
            "report": None if report is None else asdict(report),
        },
        path,
    )


def load_url_vae(path: Path) -> UrlVAE:
    """The model saved at ``path``.

    Raises:
        ConfigError: the file is missing or not a saved URL VAE.
    """
    saved = load_saved(path, "topicrawl-url-vae", "URL model")
    model = UrlVAE(VaeConfig(**saved["config"]))
    model.load_state_dict(saved["state"])
    model.eval()
    return model
