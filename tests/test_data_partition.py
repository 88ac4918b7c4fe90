"""Partitioners: disjointness, coverage, skew, class counts, domains, bounded redraws, clear errors."""

import numpy as np
import pytest

from pflnb.data import partition as P


def labels(n_per_class=60, num_classes=10, seed=0):
    return np.random.default_rng(seed).permutation(np.repeat(np.arange(num_classes), n_per_class))


def assert_disjoint_cover(parts, n, cover=True):
    allidx = np.concatenate(parts)
    assert len(np.unique(allidx)) == len(allidx), "clients overlap"
    if cover:
        assert sorted(allidx.tolist()) == list(range(n))


def max_class_fraction(parts, y):
    return np.mean([np.bincount(y[p]).max() / len(p) for p in parts])


def test_iid_equal_sizes_disjoint_and_deterministic():
    y = labels()
    parts = P.iid(y, 7, np.random.default_rng(1))
    assert_disjoint_cover(parts, len(y))
    assert max(map(len, parts)) - min(map(len, parts)) <= 1
    again = P.iid(y, 7, np.random.default_rng(1))
    assert all(np.array_equal(a, b) for a, b in zip(parts, again))
    other = P.iid(y, 7, np.random.default_rng(2))
    assert not all(np.array_equal(a, b) for a, b in zip(parts, other))


def test_dirichlet_small_alpha_more_skewed_and_min_samples():
    y = labels(100)
    small = P.dirichlet(y, 10, 0.1, np.random.default_rng(0), min_samples=10)
    large = P.dirichlet(y, 10, 100.0, np.random.default_rng(0), min_samples=10)
    for parts in (small, large):
        assert_disjoint_cover(parts, len(y))
        assert min(map(len, parts)) >= 10
    assert max_class_fraction(small, y) > max_class_fraction(large, y) + 0.3
    assert max_class_fraction(large, y) < 0.3


def test_dirichlet_deterministic_from_generator():
    y = labels()
    a = P.dirichlet(y, 5, 0.5, np.random.default_rng(3))
    b = P.dirichlet(y, 5, 0.5, np.random.default_rng(3))
    assert all(np.array_equal(u, v) for u, v in zip(a, b))


def test_dirichlet_bounded_redraws_fail_clearly():
    y = labels(10)  # 100 samples, 10 clients needing 10 each: essentially impossible under alpha 0.01
    with pytest.raises(ValueError, match="max_redraws=5.*min_samples=10"):
        P.dirichlet(y, 10, 0.01, np.random.default_rng(0), min_samples=10, max_redraws=5)
    with pytest.raises(ValueError, match="min_samples"):
        P.dirichlet(y, 10, 1.0, np.random.default_rng(0), min_samples=11)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_pathological_exactly_k_classes(k):
    y = labels()
    parts = P.pathological(y, 10, k, np.random.default_rng(0))
    assert_disjoint_cover(parts, len(y))
    for p in parts:
        assert len(np.unique(y[p])) == k


def test_pathological_few_clients_drops_unheld_classes():
    y = labels()
    parts = P.pathological(y, 2, 2, np.random.default_rng(0))
    assert_disjoint_cover(parts, len(y), cover=False)
    assert all(len(np.unique(y[p])) == 2 for p in parts)


def test_by_domain_one_domain_per_client_stratified():
    y = np.concatenate([labels(12), labels(12, seed=1), labels(12, seed=2)])
    d = np.repeat(["a", "b", "c"], 120)
    parts = P.by_domain(d, y, 6, np.random.default_rng(0))
    assert_disjoint_cover(parts, len(y))
    assert [np.unique(d[p]).tolist() for p in parts] == [["a"], ["a"], ["b"], ["b"], ["c"], ["c"]]
    for p in parts:
        assert np.bincount(y[p], minlength=10).tolist() == [6] * 10
    with pytest.raises(ValueError, match="num_clients=4 must be a multiple of the number of domains"):
        P.by_domain(d, y, 4, np.random.default_rng(0))


def test_domain_dirichlet_clients_stay_in_their_domain():
    y = np.concatenate([labels(30), labels(30, seed=1)])
    d = np.repeat([0, 1], 300)
    parts = P.domain_dirichlet(d, y, 6, 0.3, np.random.default_rng(0), min_samples=5)
    assert_disjoint_cover(parts, len(y))
    assert [int(np.unique(d[p])[0]) for p in parts] == [0, 0, 0, 1, 1, 1]
    assert all(len(np.unique(d[p])) == 1 and len(p) >= 5 for p in parts)


def test_stratified_shards_sizes_and_classes_differ_by_at_most_one():
    y = np.random.default_rng(0).integers(0, 10, size=1797)
    shards = P.stratified_shards(y, 5, np.random.default_rng(0))
    assert_disjoint_cover(shards, len(y))
    sizes = [len(s) for s in shards]
    assert max(sizes) - min(sizes) <= 1
    counts = np.array([np.bincount(y[s], minlength=10) for s in shards])
    assert (counts.max(0) - counts.min(0)).max() <= 1


def test_split_indices_disjoint_nonempty_stratified():
    y = labels(20)
    parts = P.split_indices(y, (0.6, 0.2, 0.2), np.random.default_rng(0))
    assert_disjoint_cover(parts, len(y))
    assert [len(p) for p in parts] == [120, 40, 40]
    for p, f in zip(parts, (0.6, 0.2, 0.2)):
        assert np.bincount(y[p], minlength=10).tolist() == [round(20 * f)] * 10
    tiny = P.split_indices(np.array([0, 1, 2]), (0.8, 0.1, 0.1), np.random.default_rng(0))
    assert [len(p) for p in tiny] == [1, 1, 1]
    with pytest.raises(ValueError, match="2 samples cannot be cut into 3 non-empty splits"):
        P.split_indices(np.array([0, 1]), (0.6, 0.2, 0.2))


def test_stratified_subsample_keeps_proportions():
    y = np.repeat([0, 1], [300, 100])
    idx = P.stratified_subsample(y, 40, np.random.default_rng(0))
    assert len(np.unique(idx)) == 40
    assert np.bincount(y[idx]).tolist() == [30, 10]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda y: P.dirichlet(y, 5, 0.0), "alpha"),
        (lambda y: P.dirichlet(y, 5, -1.0), "alpha"),
        (lambda y: P.iid(y, 0), "num_clients"),
        (lambda y: P.iid(y, 10_000), "num_clients=10000 is more than the 600 samples"),
        (lambda y: P.pathological(y, 5, 11), r"classes_per_client must be an integer in \[1, 10\]"),
        (lambda y: P.pathological(y, 5, 0), "classes_per_client"),
        (lambda y: P.check_fractions((0.5, 0.2, 0.2)), "fractions"),
        (lambda y: P.check_fractions((0.8, 0.2, 0.0)), "fractions"),
        (lambda y: P.check_fractions((0.8, 0.2)), "fractions"),
        (lambda y: P.partition("shards", y, 5), "partition must be one of"),
        (lambda y: P.stratified_subsample(y, 0), "max_samples"),
    ],
)
def test_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call(labels())
