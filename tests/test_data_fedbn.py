"""FedBN-layout loaders (Digits5, Office-Caltech10, DomainNet-10) on tiny files in the exact layout."""

import numpy as np
import pytest

from pflnb.data import DataUnavailable, fake, fedbn, load_digits5, load_domainnet10, load_office_caltech10


@pytest.fixture(autouse=True)
def no_env(monkeypatch):
    monkeypatch.delenv("PFLNB_DATA", raising=False)


@pytest.fixture
def digits_root(tmp_path):
    truth = fake.write_fedbn_digits5(tmp_path, n_per_part=4, n_test=6)
    return tmp_path, truth


def test_digits5_default_percent_one_partition(digits_root):
    root, truth = digits_root
    data = load_digits5(root)
    assert tuple(data) == ("mnist", "svhn", "usps", "synth", "mnistm")
    for d, parts in data.items():
        x, y = parts["train"]
        assert x.shape == (4, 3, 28, 28) and x.dtype == np.float32 and y.dtype == np.int64
        assert 0 <= x.min() and x.max() <= 1
        assert np.array_equal(y, truth[d]["parts"][0][1].astype(np.int64))
        assert parts["test"][0].shape == (6, 3, 28, 28)
        assert np.array_equal(parts["test"][1], truth[d]["test"][1])
    # grey MNIST replicated to 3 channels, values exact (no resize at 28)
    xm = data["mnist"]["train"][0]
    assert np.array_equal(xm[:, 0], xm[:, 2])
    assert np.array_equal(np.round(xm[:, 0] * 255).astype(np.uint8), truth["mnist"]["parts"][0][0])
    # RGB MNIST-M kept in HWC -> CHW order
    xmm = data["mnistm"]["train"][0]
    assert np.array_equal(np.round(xmm * 255).astype(np.uint8), truth["mnistm"]["parts"][0][0].transpose(0, 3, 1, 2))


def test_digits5_percent_and_size(digits_root):
    root, truth = digits_root
    assert len(load_digits5(root, percent=0.3)["usps"]["train"][1]) == 12
    assert len(load_digits5(root, percent=1.0)["usps"]["train"][1]) == 40
    assert len(load_digits5(root, percent=0.05)["svhn"]["train"][1]) == 2  # first half of partition 0
    assert load_digits5(root, image_size=16)["svhn"]["test"][0].shape == (6, 3, 16, 16)
    with pytest.raises(ValueError, match="percent"):
        load_digits5(root, percent=1.5)


def test_digits5_missing(tmp_path):
    with pytest.raises(DataUnavailable, match="(?s)digits5: no files found.*MNIST/test.pkl"):
        load_digits5(tmp_path)


@pytest.mark.parametrize(
    ("benchmark", "loader", "sites"),
    [("office", load_office_caltech10, fedbn.OFFICE_SITES), ("domainnet", load_domainnet10, fedbn.DOMAINNET_SITES)],
)
def test_image_list_benchmarks(tmp_path, benchmark, loader, sites):
    truth = fake.write_fedbn_sites(tmp_path, benchmark, n_train=4, n_test=3)
    classes = fedbn.OFFICE_CLASSES if benchmark == "office" else fedbn.DOMAINNET_CLASSES
    data = loader(tmp_path, image_size=10, workers=2)
    assert tuple(data) == sites
    for site, parts in data.items():
        for split, n in (("train", 4), ("test", 3)):
            x, y = parts[split]
            assert x.shape == (n, 3, 10, 10) and x.dtype == np.float32 and 0 <= x.min() and x.max() <= 1
            assert [classes[i] for i in y] == truth[site][split][1]
    # a grey PNG comes back with three equal channels
    grey = data[sites[0]]["train"][0][1]
    assert np.array_equal(grey[0], grey[1]) and np.array_equal(grey[1], grey[2])


def test_image_list_unknown_label_and_missing(tmp_path):
    import pickle

    fake.write_fedbn_sites(tmp_path, "office", n_train=2, n_test=1)
    paths, _ = pickle.load(open(tmp_path / "office_caltech_10" / "amazon_train.pkl", "rb"))
    pickle.dump((paths, ["bike", "unicorn"]), open(tmp_path / "office_caltech_10" / "amazon_train.pkl", "wb"))
    with pytest.raises(ValueError, match="unknown class labels \\['unicorn'\\]"):
        load_office_caltech10(tmp_path, image_size=8)
    with pytest.raises(DataUnavailable, match="domainnet10: no files found"):
        load_domainnet10(tmp_path / "nothing")
