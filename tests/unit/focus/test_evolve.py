from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from topicrawl.core.errors import ConfigError
from topicrawl.focus import (
    GaSettings,
    UpdateSettings,
    crossover,
    evolve,
    mutate,
    random_mutation,
    rocchio,
    roulette_select,
    update_topic,
)
from topicrawl.focus.evolve import fitness, new_features


def test_roulette_selection_is_proportional_to_fitness() -> None:
    rng = np.random.default_rng(1)
    picks = roulette_select(np.array([1.0, 3.0, 0.0]), rng, 20_000)
    counts = np.bincount(picks, minlength=3) / len(picks)
    assert counts[0] == pytest.approx(0.25, abs=0.02)
    assert counts[1] == pytest.approx(0.75, abs=0.02)
    assert counts[2] == 0.0


def test_roulette_with_all_zero_fitness_is_uniform() -> None:
    picks = roulette_select(np.zeros(4), np.random.default_rng(2), 8000)
    assert np.bincount(picks, minlength=4) / 8000 == pytest.approx([0.25] * 4, abs=0.03)


def test_windowed_roulette_is_proportional_to_fitness_over_the_lowest() -> None:
    picks = roulette_select(
        np.array([1.0, 3.0, 2.0]), np.random.default_rng(4), 30_000, window=True
    )
    counts = np.bincount(picks, minlength=3) / len(picks)
    assert counts == pytest.approx([0.0, 2 / 3, 1 / 3], abs=0.02)
    same = roulette_select(np.full(3, 0.4), np.random.default_rng(5), 9000, window=True)
    assert np.bincount(same, minlength=3) / 9000 == pytest.approx([1 / 3] * 3, abs=0.03)


def test_single_point_crossover_swaps_the_tails() -> None:
    first = np.array([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]])
    second = np.array([[5.0, 6.0, 7.0, 8.0], [5.0, 6.0, 7.0, 8.0]])
    one, two = crossover(first, second, np.array([1, 3]))
    assert one.tolist() == [[1.0, 6.0, 7.0, 8.0], [1.0, 2.0, 3.0, 8.0]]
    assert two.tolist() == [[5.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 4.0]]
    assert first[0].tolist() == [1.0, 2.0, 3.0, 4.0]  # parents untouched
    for outside in (0, 4):
        with pytest.raises(ValueError, match="crossover points"):
            crossover(first[:1], second[:1], np.array([outside]))


def test_mutation_resets_the_given_genes() -> None:
    chromosomes = np.full((3, 4), 5.0)
    mutated = mutate(chromosomes, np.array([0, 2]), np.array([3, 1]), np.array([0.25, 0.5]))
    assert mutated.tolist() == [[5.0, 5.0, 5.0, 0.25], [5.0] * 4, [5.0, 0.5, 5.0, 5.0]]
    assert chromosomes.tolist() == [[5.0] * 4] * 3  # a copy


def test_random_mutation_resets_one_gene_of_about_rate_of_the_rows() -> None:
    chromosomes = np.full((4000, 6), 5.0)
    child = random_mutation(chromosomes, 0.25, np.random.default_rng(3))
    changed_rows, positions = np.nonzero(child != chromosomes)
    assert len(set(changed_rows.tolist())) == len(changed_rows)  # one gene per row at most
    assert len(changed_rows) / len(chromosomes) == pytest.approx(0.25, abs=0.02)
    assert set(positions.tolist()) == set(range(6))
    assert np.all((child[changed_rows, positions] >= 0.0) & (child[changed_rows, positions] <= 1.0))
    assert (
        random_mutation(chromosomes, 0.0, np.random.default_rng(3)).tolist() == chromosomes.tolist()
    )


def test_fitness_is_the_mean_cosine_to_the_feedback_pages() -> None:
    feedback = np.array([[1.0, 0.0], [0.6, 0.8]])
    norms = np.array([1.0, 1.0])
    population = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    expected = [(1.0 + 0.6) / 2, (1 / math.sqrt(2) + 1.4 / math.sqrt(2)) / 2, 0.0]
    assert fitness(population, feedback, norms) == pytest.approx(expected)


def test_ga_improves_on_its_start_and_is_reproducible() -> None:
    feedback = np.array([[0.9, 0.4, 0.1, 0.0], [0.8, 0.5, 0.0, 0.1], [0.7, 0.6, 0.2, 0.0]])
    norms = np.linalg.norm(feedback, axis=1)
    start = np.array([0.0, 0.0, 1.0, 1.0])
    settings = GaSettings(population=20, max_generations=40)
    one = evolve(feedback, norms, start, settings=settings, rng=np.random.default_rng(5))
    two = evolve(feedback, norms, start, settings=settings, rng=np.random.default_rng(5))
    assert one.best.tolist() == two.best.tolist()
    start_fitness = fitness(start[None, :], feedback, norms)[0]
    assert one.fitness > start_fitness
    assert one.fitness > 0.9
    assert 1 <= one.generations <= 40
    assert len(one.mean_fitness) == one.generations
    assert np.all((one.best >= 0.0) & (one.best <= 1.0))


def test_ga_stops_when_mean_fitness_stops_rising() -> None:
    # Every chromosome of a one-gene GA has fitness 1, so the mean never rises.
    feedback = np.array([[1.0]])
    result = evolve(
        feedback,
        np.array([1.0]),
        np.array([0.5]),
        settings=GaSettings(population=4, max_generations=50, patience=2),
        rng=np.random.default_rng(0),
    )
    assert result.generations == 3


def test_feedback_pages_start_in_the_population() -> None:
    # One page: its own weights, scaled to [0, 1], are the best chromosome (cosine 1).
    feedback = np.array([[0.8, 0.0, 0.6]])
    start = np.array([0.0, 1.0, 0.0])
    one_generation = GaSettings(population=2, max_generations=1, elite=0)
    seeded = evolve(
        feedback, np.array([1.0]), start, settings=one_generation, rng=np.random.default_rng(6)
    )
    assert seeded.best.tolist() == pytest.approx([1.0, 0.0, 0.75])
    assert seeded.fitness == pytest.approx(1.0)
    random_start = dataclasses.replace(one_generation, seed_pages=False)
    unseeded = evolve(
        feedback, np.array([1.0]), start, settings=random_start, rng=np.random.default_rng(6)
    )
    assert unseeded.fitness < 0.99


def test_rocchio_step_hand_computed() -> None:
    query = {0: 1.0, 1: 1.0}  # normalised: 0.7071 each
    positive = {0: 3.0, 2: 4.0}  # normalised: 0.6, 0.8
    negative = {1: 2.0}  # normalised: 1.0
    moved = rocchio(query, positive, negative, alpha=1.0, beta=0.5, gamma=0.25)
    root = 1 / math.sqrt(2)
    assert moved == pytest.approx({0: root + 0.3, 1: root - 0.25, 2: 0.4})


def test_rocchio_clips_negative_weights() -> None:
    moved = rocchio({0: 1.0}, {0: 1.0}, {1: 1.0}, alpha=1.0, beta=1.0, gamma=1.0)
    assert moved == {0: 2.0}


def test_new_features_are_frequent_in_the_feedback() -> None:
    feedback = [{0: 0.5, 7: 0.4, 8: 0.1}, {0: 0.5, 7: 0.2, 9: 0.9}, {7: 0.3, 8: 0.3}]
    assert new_features({0}, feedback, count=5, min_share=0.5) == [7, 8]
    assert new_features({0}, feedback, count=1, min_share=0.5) == [7]
    assert new_features({0}, feedback, count=5, min_share=1.0) == [7]


def test_update_topic_lets_a_frequent_feedback_word_in() -> None:
    crawler, spider, frontier, pasta = 0, 1, 2, 3
    positives = [
        {crawler: 0.6, frontier: 0.8},
        {crawler: 0.5, frontier: 0.7, spider: 0.5},
        {crawler: 0.7, frontier: 0.7},
    ]
    negatives = [{pasta: 1.0}, {pasta: 0.8, spider: 0.6}]
    update = update_topic(
        {crawler: 1.0, spider: 1.0},
        positives,
        negatives,
        keyword_ids={crawler, spider},
        settings=UpdateSettings(ga=GaSettings(population=20)),
        rng=np.random.default_rng(11),
    )
    assert update.added == (frontier,)
    assert frontier in update.weights
    assert max(update.weights.values()) == pytest.approx(1.0)
    assert pasta not in update.weights
    assert update.weights[spider] >= 0.1  # the user's keyword keeps its floor
    assert update.ga.fitness > 0.5


def test_update_topic_respects_max_features_and_keeps_keywords() -> None:
    positives = [dict.fromkeys(range(10), 1.0) for _ in range(3)]
    update = update_topic(
        {0: 1.0},
        positives,
        [],
        keyword_ids={0},
        settings=UpdateSettings(new_features=9, max_features=4),
        rng=np.random.default_rng(0),
    )
    assert len(update.weights) == 4
    assert 0 in update.weights


def test_invalid_ga_and_update_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        GaSettings(population=1)
    with pytest.raises(ConfigError):
        GaSettings(mutation_rate=1.5)
    with pytest.raises(ConfigError):
        UpdateSettings(alpha=-1.0)
    with pytest.raises(ValueError, match="feedback"):
        update_topic(
            {0: 1.0},
            [],
            [],
            keyword_ids={0},
            settings=UpdateSettings(),
            rng=np.random.default_rng(0),
        )


def test_new_features_rank_by_weight_and_need_lift_over_the_collection() -> None:
    # Term 7 is in every feedback page but weighs little (site boilerplate); 8 weighs more.
    feedback = [{7: 0.1, 8: 0.6}, {7: 0.1, 8: 0.5}, {7: 0.1, 9: 0.2}]
    assert new_features(set(), feedback, count=5, min_share=0.5) == [8, 7]
    # In the whole collection 7 is in 90 % of the pages: in 100 % of the feedback is a lift
    # of 1.1 < 2, so it stays out; 8 (2/3 of the feedback, 10 % of the collection) gets in.
    shares = {7: 0.9, 8: 0.1, 9: 0.1}
    assert new_features(
        set(), feedback, count=5, min_share=0.5, background=shares.__getitem__, min_lift=2.0
    ) == [8]


@pytest.mark.parametrize(
    ("query", "expected"), [("current", {0: 1.0, 1: 1.0}), ("initial", {0: 1.0})]
)
def test_the_rocchio_query_term_is_the_current_or_the_initial_vector(
    query: str, expected: dict[int, float]
) -> None:
    # No feedback or negative term (beta = gamma = 0): the step returns its query term, which
    # is the drifted vector {0, 1} or the user's {0}.
    update = update_topic(
        {0: 1.0, 1: 1.0},
        [{0: 1.0, 1: 1.0}],
        [],
        keyword_ids={0},
        settings=UpdateSettings(alpha=1.0, beta=0.0, gamma=0.0, new_features=0, query=query),  # type: ignore[arg-type]
        rng=np.random.default_rng(0),
        initial={0: 1.0},
    )
    assert update.weights == pytest.approx(expected)


def test_an_unknown_rocchio_query_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="Rocchio query"):
        UpdateSettings(query="original")  # type: ignore[arg-type]
