"""Leave-one-site-out model selection over per-topic scores (issue #18).

A score is a topic's fetches to 90 % recall over the oracle's (lower is better). For each site
S, the setting with the lowest geometric mean over the topics of every *other* site is chosen
and reported on S's topics: the left-out number. The in-sample setting is the best over all
topics, reported on each site as well; the gap between the two is what tuning on a site buys
that does not carry over to another.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "Choice",
    "FeatureVerdict",
    "feature_verdict",
    "geomean",
    "in_sample",
    "leave_one_site_out",
]

Scores = Mapping[str, Mapping[str, float]]
"""setting -> topic -> score (positive; lower is better)."""


def geomean(values: Iterable[float]) -> float:
    """Geometric mean of positive values (nan for none)."""
    logs = [math.log(v) for v in values]
    return math.exp(sum(logs) / len(logs)) if logs else math.nan


@dataclass(frozen=True, slots=True)
class Choice:
    """The setting chosen without ``site`` and how it does there."""

    site: str
    setting: str
    train: float
    """Geometric mean of the chosen setting over the other sites' topics."""
    held_out: float
    """Geometric mean of the chosen setting over ``site``'s topics."""


def _complete(scores: Scores, settings: Sequence[str], topics: Iterable[str]) -> list[str]:
    """The topics every setting has a score for."""
    return [t for t in topics if all(t in scores[s] for s in settings)]


def _best(scores: Scores, settings: Sequence[str], topics: Sequence[str]) -> tuple[str, float]:
    """The setting with the lowest geometric mean over ``topics`` (ties: the earlier one)."""
    best, best_mean = settings[0], math.inf
    for setting in settings:
        mean = geomean(scores[setting][t] for t in topics)
        if mean < best_mean - 1e-12:
            best, best_mean = setting, mean
    return best, best_mean


def leave_one_site_out(
    scores: Scores, site_of: Mapping[str, str], settings: Sequence[str]
) -> list[Choice]:
    """For each site (in the order of ``site_of``), the setting chosen on all other sites.

    Only topics that every setting has a score for take part. Raises ``ValueError`` with fewer
    than two sites (nothing to leave out).
    """
    topics = _complete(scores, settings, site_of)
    sites = list(dict.fromkeys(site_of[t] for t in topics))
    if len(sites) < 2:
        raise ValueError("leave-one-site-out needs topics on at least two sites")
    choices = []
    for site in sites:
        train = [t for t in topics if site_of[t] != site]
        test = [t for t in topics if site_of[t] == site]
        setting, train_mean = _best(scores, settings, train)
        held_out = geomean(scores[setting][t] for t in test)
        choices.append(Choice(site, setting, train_mean, held_out))
    return choices


def in_sample(scores: Scores, site_of: Mapping[str, str], settings: Sequence[str]) -> str:
    """The setting with the lowest geometric mean over every topic of every site."""
    return _best(scores, settings, _complete(scores, settings, site_of))[0]


@dataclass(frozen=True, slots=True)
class FeatureVerdict:
    """A feature (setting ``on``) against the same setting without it (``off``).

    ``in_sample``: geometric mean over all topics, on and off. ``sites_helped``: the sites
    whose mean is lower with the feature. ``held_out``: the pooled left-out geometric mean
    when each site chooses between on and off on the other sites, against always off.
    """

    on: str
    off: str
    in_sample: tuple[float, float]
    sites_helped: tuple[str, ...]
    sites: int
    held_out: tuple[float, float]

    @property
    def survives(self) -> bool:
        """Helps left-out: choosing it on other sites beats never using it on the site left
        out, and it helps on at least half of the sites."""
        return self.held_out[0] < self.held_out[1] and 2 * len(self.sites_helped) >= self.sites


def feature_verdict(
    scores: Scores, site_of: Mapping[str, str], on: str, off: str
) -> FeatureVerdict:
    """Judge one feature by leave-one-site-out between the settings with and without it."""
    pair = [on, off]
    topics = _complete(scores, pair, site_of)
    sites = list(dict.fromkeys(site_of[t] for t in topics))
    helped = tuple(
        site
        for site in sites
        if geomean(scores[on][t] for t in topics if site_of[t] == site)
        < geomean(scores[off][t] for t in topics if site_of[t] == site) - 1e-12
    )
    chosen = {c.site: c.setting for c in leave_one_site_out(scores, site_of, pair)}
    held = geomean(scores[chosen[site_of[t]]][t] for t in topics)
    return FeatureVerdict(
        on=on,
        off=off,
        in_sample=(geomean(scores[on][t] for t in topics), geomean(scores[off][t] for t in topics)),
        sites_helped=helped,
        sites=len(sites),
        held_out=(held, geomean(scores[off][t] for t in topics)),
    )
