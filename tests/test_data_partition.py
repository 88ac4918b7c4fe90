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


# ---- the Dirichlet partition's distribution: Dir(alpha) over clients for every class, pinned by moments and exactly


def _dir_moment_stat(props: np.ndarray) -> np.ndarray:
    """Per draw (rows), sum over clients of (p_k - 1/K)^2; under Dir(alpha) over K clients its mean is
    K Var(p_k) = (1 - 1/K) / (K alpha + 1)."""
    return ((props - 1.0 / props.shape[1]) ** 2).sum(axis=1)


@pytest.mark.parametrize(("num_clients", "alpha"), [(5, 0.1), (10, 0.3)])
def test_dirichlet_class_proportions_have_dir_alpha_moments_over_clients(num_clients, alpha):
    """One big class (5000) and two small ones (20 each, together fewer than N/K, so the balance rule never zeroes a
    client before the big class is cut, whatever its place in the class order): the big class's shares across the
    K clients have the moments of Dir(alpha) over clients, mean 1/K per client and K Var = (1 - 1/K)/(K alpha + 1).
    A draw over the wrong axis (Dir(alpha) over classes for each client, a class's shares its column renormalised)
    keeps the label skew but lies far outside the band; the test checks that too."""
    K, n_draws, big = num_clients, 2000, 5000
    y = np.repeat([0, 1, 2], [big, 20, 20])
    rng = np.random.default_rng(0)
    props = np.empty((n_draws, K))
    for r in range(n_draws):
        parts = P.dirichlet(y, K, alpha, rng, min_samples=0)
        props[r] = [np.count_nonzero(y[p] == 0) / big for p in parts]
    var = (1 - 1 / K) / (K * alpha + 1) / K  # Var(p_k) of Dir(alpha) over K clients
    assert np.all(np.abs(props.mean(axis=0) - 1 / K) <= 5 * np.sqrt(var / n_draws))  # every client: mean 1/K
    v = _dir_moment_stat(props)
    band = 5 * v.std(ddof=1) / np.sqrt(n_draws)
    assert abs(v.mean() - K * var) <= band
    # the wrong axis, simulated here: each client's class mix ~ Dir(alpha) over the 3 classes, class 0 split across
    # clients in proportion to the clients' class-0 weights
    mix = np.random.default_rng(1).dirichlet(np.full(3, alpha), size=(n_draws, K))[:, :, 0]
    wrong = _dir_moment_stat(mix / mix.sum(axis=1, keepdims=True))
    assert abs(wrong.mean() - K * var) > 4 * band


@pytest.mark.xfail(
    strict=True,
    reason="the NIID-Bench balance rule (a client holding >= N/K samples gets no share of later classes), documented "
    "in pflnb/data/partition.py and used by Fed-CO2's code but absent from specs/data-protocols.md, changes the "
    "realised distribution: with equal classes the per-class shares across clients are more dispersed than "
    "Dir(alpha) (K Var 0.27 vs 0.229 at K=5, alpha=0.5; ~14 standard errors) and client sizes more even; "
    "without the rule this test passes; kept pending a decision, since changing the rule changes every committed result",
)
def test_dirichlet_equal_classes_realised_shares_have_dir_alpha_moments():
    """Ten equal classes, K = 5, alpha = 0.5: every class's shares across clients against Dir(alpha) over clients."""
    K, alpha, n_draws, C = 5, 0.5, 300, 10
    y = np.repeat(np.arange(C), 100)
    rng = np.random.default_rng(0)
    stats = np.empty(n_draws)
    for r in range(n_draws):
        parts = P.dirichlet(y, K, alpha, rng, min_samples=0)
        counts = np.array([np.bincount(y[p], minlength=C) for p in parts])  # K x C
        stats[r] = _dir_moment_stat((counts / counts.sum(axis=0)).T).mean()
    expected = (1 - 1 / K) / (K * alpha + 1)
    assert abs(stats.mean() - expected) <= 5 * stats.std(ddof=1) / np.sqrt(n_draws)


def _expected_dirichlet(y, K, alpha, seed, min_samples):
    """The documented algorithm written out: per draw, for every class in a permuted order, its samples in a permuted
    order, shares ~ Dir(alpha) over the K clients, the shares of clients already holding >= N/K samples set to 0 and
    the rest renormalised (all zero: equal shares); client k takes the samples between floor(n S_{k-1}) and
    floor(n S_k) (S the running share sum, the last client up to n); redrawn until every client has min_samples.
    Returns the clients' sorted indices and counts of draws, capped class cuts and equal-share fallbacks."""
    rng = np.random.default_rng(seed)
    cap = len(y) / K
    draws = capped = uniform = 0
    while True:
        draws += 1
        members = [[] for _ in range(K)]
        held = [0] * K
        for c in rng.permutation(np.unique(y)):
            pool = rng.permutation(np.flatnonzero(y == c))
            w = rng.dirichlet(np.full(K, alpha))
            w = np.array([w[k] if held[k] < cap else 0.0 for k in range(K)])
            capped += int(max(held) >= cap)
            if w.sum() > 0:
                share = w / w.sum()
            else:
                share, uniform = np.full(K, 1.0 / K), uniform + 1
            lo, acc = 0, 0.0
            for k in range(K):
                acc += share[k]
                hi = pool.size if k == K - 1 else int(np.floor(acc * pool.size))
                members[k].extend(pool[lo:hi].tolist())
                held[k] += hi - lo
                lo = hi
        if min(held) >= min_samples:
            parts = [np.sort(np.array(m, dtype=np.int64)) for m in members]
            return parts, {"draws": draws, "capped": capped, "uniform": uniform}


@pytest.mark.parametrize(
    ("y", "K", "alpha", "seed", "min_samples", "path"),
    [
        (labels(60), 10, 0.1, 0, 10, {"draws": 1, "uniform": 0}),
        (labels(60), 10, 0.3, 0, 40, {"draws": 4, "uniform": 0}),  # three redraws
        (np.repeat(np.arange(6), [100, 100, 100, 10, 10, 10]), 3, 1e-3, 0, 0, {"draws": 1, "uniform": 1}),
    ],
)
def test_dirichlet_seeded_partition_equals_the_algorithm_recomputed(y, K, alpha, seed, min_samples, path):
    """Client sizes, class counts and indices of a seeded draw equal the partition recomputed in the test with the
    same random calls in the same order; the cases cover the balance rule, redraws and the all-zero fallback."""
    expected, taken = _expected_dirichlet(y, K, alpha, seed, min_samples)
    assert taken["capped"] > 0 and {k: taken[k] for k in path} == path
    parts = P.dirichlet(y, K, alpha, np.random.default_rng(seed), min_samples=min_samples)
    C = int(y.max()) + 1
    assert [len(p) for p in parts] == [len(e) for e in expected]
    got_counts = np.array([np.bincount(y[p], minlength=C) for p in parts])
    assert np.array_equal(got_counts, np.array([np.bincount(y[e], minlength=C) for e in expected]))
    assert all(np.array_equal(p, e) for p, e in zip(parts, expected))


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
