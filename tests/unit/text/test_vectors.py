from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from topicrawl.text import (
    OOV,
    TfidfModel,
    Vocabulary,
    centroid,
    combine,
    cosine,
    dot,
    norm,
    normalized,
)


def _model(*documents: str) -> TfidfModel:
    model = TfidfModel()
    for document in documents:
        model.add_document(model.counts(document.split()))
    return model


def test_idf_is_log_n_over_nk_plus_one_hundredth() -> None:
    model = _model("crawler web", "crawler spider", "cooking", "web cooking")
    ids = model.vocabulary
    assert model.documents == 4
    assert model.df(ids.id_of("crawler")) == 2
    assert model.idf(ids.id_of("crawler")) == pytest.approx(math.log(4 / 2 + 0.01))
    assert model.idf(ids.id_of("spider")) == pytest.approx(math.log(4 / 1 + 0.01))


def test_unseen_terms_and_empty_collection_have_a_defined_idf() -> None:
    model = TfidfModel()
    unseen = model.vocabulary.id_of("never")
    assert model.idf(unseen) == pytest.approx(math.log(1.01))
    model = _model("a b", "a c")
    assert model.idf(model.vocabulary.id_of("zzz")) == pytest.approx(math.log(2 / 1 + 0.01))


def test_term_in_every_document_keeps_a_small_positive_weight() -> None:
    model = _model("web", "web", "web")
    assert model.idf(model.vocabulary.id_of("web")) == pytest.approx(math.log(1.01))
    assert model.idf(model.vocabulary.id_of("web")) > 0


def test_vector_weights_are_tf_times_idf_normalised() -> None:
    model = _model("crawler web", "crawler spider", "cooking", "web cooking")
    vector = model.vectorize(["crawler", "crawler", "spider"])
    crawler = 2 * math.log(4 / 2 + 0.01)
    spider = 1 * math.log(4 / 1 + 0.01)
    length = math.hypot(crawler, spider)
    ids = model.vocabulary
    assert vector[ids.id_of("crawler")] == pytest.approx(crawler / length)
    assert vector[ids.id_of("spider")] == pytest.approx(spider / length)
    assert norm(vector) == pytest.approx(1.0)


def test_document_frequencies_update_as_pages_arrive() -> None:
    model = TfidfModel()
    first = model.vectorize(["crawler", "web"], add=True)
    assert model.documents == 1
    assert first  # uniform idf on one document: plain tf cosine
    model.vectorize(["crawler"], add=True)
    crawler = model.vocabulary.id_of("crawler")
    web = model.vocabulary.id_of("web")
    assert model.df(crawler) == 2
    assert model.df(web) == 1
    assert model.idf(web) > model.idf(crawler)


def test_a_weighted_document_counts_as_that_fraction_of_one() -> None:
    model = _model("crawler web", "cooking")
    model.add_document(model.counts(["crawler"]), weight=0.5)
    model.add_document(model.counts(["cooking"]), weight=0.0)  # counts for nothing
    crawler = model.vocabulary.id_of("crawler")
    assert model.documents == pytest.approx(2.5)
    assert model.df(crawler) == pytest.approx(1.5)
    assert model.idf(crawler) == pytest.approx(math.log(2.5 / 1.5 + 0.01))
    # A term only in down-weighted documents still counts as in one document at least.
    model.add_document(model.counts(["rare"]), weight=0.25)
    assert model.idf(model.vocabulary.id_of("rare")) == pytest.approx(math.log(2.75 / 1 + 0.01))


@pytest.mark.parametrize("weight", [-0.1, math.inf, math.nan])
def test_a_documents_weight_must_be_finite_and_not_negative(weight: float) -> None:
    model = TfidfModel()
    with pytest.raises(ValueError, match="weight"):
        model.add_document(model.counts(["a"]), weight=weight)
    assert model.documents == 0


def test_vectorize_without_add_leaves_statistics_alone() -> None:
    model = _model("a b")
    model.vectorize(["a", "z"])
    assert model.documents == 1
    assert model.df(model.vocabulary.id_of("z")) == 0


def test_cosine_hand_computed() -> None:
    a = {0: 1.0, 1: 1.0}
    b = {0: 1.0}
    assert cosine(a, b) == pytest.approx(1 / math.sqrt(2))
    assert cosine(a, {2: 3.0}) == 0.0
    assert cosine({}, b) == 0.0
    assert dot({0: 2.0, 1: 3.0}, {1: 4.0, 5: 1.0}) == 12.0


def test_normalized_centroid_combine() -> None:
    assert normalized({0: 3.0, 1: 4.0}) == {0: pytest.approx(0.6), 1: pytest.approx(0.8)}
    assert normalized({0: 0.0}) == {}
    assert centroid([{0: 1.0}, {0: 3.0, 1: 2.0}]) == {0: 2.0, 1: 1.0}
    assert centroid([]) == {}
    assert combine([(2.0, {0: 1.0}), (-1.0, {0: 1.0, 1: 1.0})]) == {0: 1.0, 1: -1.0}


def test_vocabulary_is_bounded_and_reversible() -> None:
    vocabulary = Vocabulary(max_size=2)
    assert vocabulary.id_of("a") == 0
    assert vocabulary.id_of("b") == 1
    assert vocabulary.id_of("c") == OOV
    assert vocabulary.id_of("a") == 0
    assert vocabulary.term(1) == "b"
    assert vocabulary.term(OOV) == "<oov>"
    assert "c" not in vocabulary
    assert len(vocabulary) == 2
    assert vocabulary.get("zzz") is None


def test_full_vocabulary_still_counts_new_terms_in_the_norm() -> None:
    model = TfidfModel(vocabulary=Vocabulary(max_size=1))
    vector = model.vectorize(["known", "new1", "new2"])
    assert vector[0] == pytest.approx(1 / math.sqrt(5))  # known: 1, <oov>: 2


_vectors = st.dictionaries(
    st.integers(0, 20), st.floats(0, 100, allow_nan=False, allow_subnormal=False), max_size=10
)


@given(_vectors, _vectors)
def test_cosine_of_non_negative_vectors_is_symmetric_and_in_unit_range(
    a: dict[int, float], b: dict[int, float]
) -> None:
    value = cosine(a, b)
    assert -1e-9 <= value <= 1 + 1e-9
    assert value == pytest.approx(cosine(b, a))


def test_ids_of_gives_what_id_of_would_in_the_same_order() -> None:
    terms = ["b", "a", "new", "b", "other", "new"]
    for size in (100, 3):  # 3: the vocabulary fills up on "new"; "other" gets the OOV id
        one_by_one, at_once = Vocabulary(max_size=size), Vocabulary(max_size=size)
        for known in ("a", "b"):
            one_by_one.id_of(known)
            at_once.id_of(known)
        assert at_once.ids_of(terms) == [one_by_one.id_of(term) for term in terms]
        assert [at_once.term(i) for i in range(len(at_once))] == [
            one_by_one.term(i) for i in range(len(one_by_one))
        ]
    assert at_once.ids_of(["other"]) == [OOV]


def test_smoothed_weights_use_log_one_plus_n_over_one_plus_nk_plus_one() -> None:
    model = _model("crawler web", "crawler spider", "cooking", "web cooking")
    ids = model.vocabulary
    counts = {ids.id_of("crawler"): 2, ids.id_of("spider"): 1}
    crawler = 2 * (math.log(5 / 3) + 1)
    spider = 1 * (math.log(5 / 2) + 1)
    length = math.hypot(crawler, spider)
    vector = model.weigh(counts, smooth=True)
    assert vector[ids.id_of("crawler")] == pytest.approx(crawler / length)
    assert vector[ids.id_of("spider")] == pytest.approx(spider / length)
    # The plain weights of the same counts differ (the default is unchanged).
    assert model.weigh(counts) == model.vectorize(["crawler", "crawler", "spider"])
    assert model.weigh(counts) != pytest.approx(vector)


def test_smoothing_keeps_a_term_of_every_document_at_weight_one() -> None:
    model = _model("web", "web", "web")
    ids = model.vocabulary
    rare = ids.id_of("spider")  # in no document yet
    plain = model.weigh({ids.id_of("web"): 1, rare: 1})
    smooth = model.weigh({ids.id_of("web"): 1, rare: 1}, smooth=True)
    # Plain: log(1.01) against log(3 / 1 + 0.01): "web" is about a hundredth of "spider".
    assert plain[ids.id_of("web")] / plain[rare] == pytest.approx(math.log(1.01) / math.log(3.01))
    # Smoothed: 1 against log(4 / 1) + 1.
    assert smooth[ids.id_of("web")] / smooth[rare] == pytest.approx(1 / (math.log(4) + 1))


def test_capped_terms_count_as_in_at_most_cap_of_the_documents() -> None:
    model = _model("web crawler", "web", "web", "web spider")
    ids = model.vocabulary
    web, crawler = ids.id_of("web"), ids.id_of("crawler")
    counts = {web: 1, crawler: 1}
    capped = model.weigh(counts, capped={web}, cap=0.5)
    # "web" is in 4 of 4 documents: capped at 0.5 * 4 = 2, so log(4 / 2 + 0.01); "crawler"
    # (1 of 4, not capped) keeps log(4 / 1 + 0.01).
    assert capped[web] / capped[crawler] == pytest.approx(math.log(2.01) / math.log(4.01))
    # A capped term under the cap, and the default cap of 1, leave the plain weights.
    assert model.weigh(counts, capped={crawler}, cap=0.5) == model.weigh(counts)
    assert model.weigh(counts, capped={web}) == model.weigh(counts)
