"""digits5-lite: shapes, ranges, disjoint stratified shards, determinism, distinct domain styles."""

import numpy as np
import pytest

from pflnb.data import domain_samples, load_digits5_lite
from pflnb.data.digits5_lite import DOMAINS, digits5_lite_shards


@pytest.mark.parametrize("size", [8, 16, 28, 32])
def test_shapes_dtypes_ranges(size):
    from sklearn.datasets import load_digits

    per_class = np.bincount(load_digits().target) / 5
    data = load_digits5_lite(image_size=size, seed=0)
    assert tuple(data) == DOMAINS
    assert sum(len(y) for _, y in data.values()) == 1797
    for x, y in data.values():
        assert x.shape == (len(y), 3, size, size) and x.dtype == np.float32
        assert y.dtype == np.int64 and 359 <= len(y) <= 360
        assert x.min() >= 0.0 and x.max() <= 1.0
        counts = np.bincount(y, minlength=10)  # class-stratified shard
        assert (counts >= np.floor(per_class)).all() and (counts <= np.ceil(per_class)).all()


def test_shards_are_disjoint_and_rendered_from_their_rows():
    from sklearn.datasets import load_digits

    raw = load_digits()
    shards = digits5_lite_shards(seed=3)
    rows = np.concatenate(list(shards.values()))
    assert sorted(rows.tolist()) == list(range(1797))  # disjoint and complete
    data = load_digits5_lite(image_size=8, seed=3)
    for d, idx in shards.items():
        assert np.array_equal(data[d][1], raw.target[idx])
    x = data["mnist"][0]  # the MNIST-like domain is the digit itself
    assert np.allclose(x, np.repeat(raw.images[shards["mnist"]][:, None] / 16.0, 3, axis=1), atol=1e-6)


def test_deterministic_from_seed():
    a = load_digits5_lite(16, seed=1)
    b = load_digits5_lite(16, seed=1)
    c = load_digits5_lite(16, seed=2)
    for d in DOMAINS:
        assert np.array_equal(a[d][0], b[d][0]) and np.array_equal(a[d][1], b[d][1])
        assert not np.array_equal(a[d][1], c[d][1]) or not np.array_equal(a[d][0], c[d][0])


def test_domain_statistics_differ():
    data = load_digits5_lite(16, seed=0)
    stats = {}
    for d, (x, _) in data.items():
        colour = np.abs(x - x.mean(axis=1, keepdims=True)).mean()  # 0 for grey images
        stats[d] = np.array([x.mean(), x.std(), colour])
    assert stats["mnist"][2] == 0 and stats["usps"][2] < 1e-7
    assert stats["svhn"][2] > 0.02 and stats["synth"][2] > 0.02 and stats["mnistm"][2] > 0.01
    assert stats["usps"][0] > stats["mnist"][0] + 0.05 and stats["usps"][1] < 0.6 * stats["mnist"][1]
    assert stats["svhn"][0] > stats["mnist"][0] + 0.1  # inverted digits: bright background
    for i, a in enumerate(DOMAINS):
        for b in DOMAINS[i + 1 :]:
            assert np.abs(stats[a] - stats[b]).max() > 0.02, (a, b)


def test_unsupported_image_size():
    with pytest.raises(ValueError, match=r"image_size for digits5-lite must be one of \(8, 16, 28, 32\)"):
        load_digits5_lite(image_size=12)


def test_domain_samples():
    s = domain_samples(images_per_domain=12, image_size=8, seed=0)
    assert tuple(s) == DOMAINS
    assert all(v.shape == (12, 3, 8, 8) for v in s.values())
