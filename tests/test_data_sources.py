"""Real-data loaders on tiny files in torchvision's exact on-disk formats; no network."""

from pathlib import Path

import numpy as np
import pytest

from pflnb.data import DataUnavailable, fake, load_fmnist, sources


@pytest.fixture(autouse=True)
def offline(monkeypatch, tmp_path):
    """No downloads, no user data folder, no system Fashion-MNIST unless a test sets them."""
    monkeypatch.setenv("PFLNB_DOWNLOAD", "0")
    monkeypatch.delenv("PFLNB_DATA", raising=False)
    monkeypatch.setattr(sources, "FASHION_MNIST_SYSTEM", tmp_path / "no-system-fmnist")


def same(read, truth):
    """Loader output (float in [0, 1]) equals the uint8 truth."""
    x, y = read
    assert x.dtype == np.float32 and y.dtype == np.int64
    assert np.array_equal(np.round(x * 255).astype(np.uint8), truth[0])
    assert np.array_equal(y, truth[1])


@pytest.mark.parametrize("gz", [True, False])
def test_idx_reader_gz_and_raw(tmp_path, gz):
    arr = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    path = tmp_path / ("a.idx.gz" if gz else "a.idx")
    fake.write_idx(path, arr)
    assert np.array_equal(sources.read_idx(path), arr)
    (tmp_path / "bad").write_bytes(b"\x01\x02\x03\x04")
    with pytest.raises(ValueError, match="not an IDX file"):
        sources.read_idx(tmp_path / "bad")


@pytest.mark.parametrize("layout", ["", "fashion-mnist", "FashionMNIST/raw"])
def test_fmnist_layouts_under_root(tmp_path, layout):
    truth = fake.write_mnist_folder(tmp_path / "data" / layout, n_train=12, n_test=5, gz=layout != "FashionMNIST/raw")
    splits = sources.load_fmnist_splits(tmp_path / "data")
    same(splits["fmnist"]["train"], truth["train"])
    same(splits["fmnist"]["test"], truth["test"])
    pooled = load_fmnist(tmp_path / "data")
    assert pooled["fmnist"][0].shape == (17, 1, 28, 28)


def test_fmnist_from_env_and_system_folder(tmp_path, monkeypatch):
    truth = fake.write_mnist_folder(tmp_path / "env" / "fashion-mnist", n_train=6, n_test=4)
    monkeypatch.setenv("PFLNB_DATA", str(tmp_path / "env"))
    same(load_fmnist()["fmnist"], tuple(np.concatenate(a) for a in zip(truth["train"], truth["test"])))
    monkeypatch.delenv("PFLNB_DATA")
    fake.write_mnist_folder(tmp_path / "sys", n_train=3, n_test=3)
    monkeypatch.setattr(sources, "FASHION_MNIST_SYSTEM", tmp_path / "sys")
    assert len(load_fmnist()["fmnist"][1]) == 6


def test_fmnist_unavailable_lists_places_tried(tmp_path):
    with pytest.raises(DataUnavailable, match="(?s)fmnist: no data found.*no-system-fmnist.*download") as e:
        load_fmnist(tmp_path / "empty")
    assert str(tmp_path / "empty" / "FashionMNIST" / "raw") in str(e.value)


def test_download_path_is_used_and_failure_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("PFLNB_DOWNLOAD", "1")
    calls = []

    def fake_download(name, target):  # stands in for torchvision: writes its layout
        calls.append((name, target))
        fake.write_mnist_folder(Path(target) / "MNIST" / "raw", n_train=5, n_test=5, gz=False)

    monkeypatch.setattr(sources, "_torchvision_download", fake_download)
    x, y = sources.load_mnist(tmp_path / "dl")["mnist"]
    assert calls == [("mnist", tmp_path / "dl")] and x.shape == (10, 1, 28, 28)

    def failing(name, target):
        raise RuntimeError("network unreachable")

    monkeypatch.setattr(sources, "_torchvision_download", failing)
    with pytest.raises(DataUnavailable, match="torchvision download into .*network unreachable"):
        sources.load_svhn(tmp_path / "nothing")
    with pytest.raises(DataUnavailable, match="disabled"):
        sources.load_usps(tmp_path / "nothing", download=False)


def test_mnist_torchvision_layout(tmp_path):
    truth = fake.write_mnist_folder(tmp_path / "MNIST" / "raw", n_train=8, n_test=4, gz=False)
    splits = sources.load_mnist_splits(tmp_path)
    same(splits["mnist"]["train"], truth["train"])
    same(splits["mnist"]["test"], truth["test"])


@pytest.mark.parametrize("bytes_keys", [False, True])
def test_cifar10_pickles(tmp_path, bytes_keys):
    truth = fake.write_cifar_folder(tmp_path / "cifar-10-batches-py", n_per_batch=3, bytes_keys=bytes_keys)
    splits = sources.load_cifar10_splits(tmp_path)
    same(splits["cifar10"]["train"], truth["train"])
    same(splits["cifar10"]["test"], truth["test"])
    assert sources.load_cifar10(tmp_path)["cifar10"][0].shape == (18, 3, 32, 32)


def test_cifar100_pickles(tmp_path):
    truth = fake.write_cifar_folder(tmp_path / "cifar-100-python", n_per_batch=7, fine=True, bytes_keys=True)
    splits = sources.load_cifar100_splits(tmp_path)
    same(splits["cifar100"]["train"], truth["train"])
    same(splits["cifar100"]["test"], truth["test"])


def test_svhn_mat(tmp_path):
    truth = fake.write_svhn_folder(tmp_path / "svhn", n_train=11, n_test=10)
    splits = sources.load_svhn_splits(tmp_path)
    same(splits["svhn"]["train"], truth["train"])
    same(splits["svhn"]["test"], truth["test"])
    assert 0 in splits["svhn"]["test"][1] and 10 not in splits["svhn"]["train"][1]  # label 10 means digit 0


def test_usps_bz2(tmp_path):
    truth = fake.write_usps_folder(tmp_path, n_train=12, n_test=10)
    splits = sources.load_usps_splits(tmp_path)
    for s in ("train", "test"):
        x, y = splits["usps"][s]
        assert x.shape == (len(truth[s][1]), 1, 16, 16)
        assert np.abs(x * 255 - truth[s][0]).max() <= 1.0  # torchvision's uint8 quantisation
        assert np.array_equal(y, truth[s][1])


@pytest.mark.skipif(not Path("/usr/share/datasets/fashion-mnist").is_dir(), reason="system Fashion-MNIST absent")
def test_real_fashion_mnist_system_package(monkeypatch):
    monkeypatch.setattr(sources, "FASHION_MNIST_SYSTEM", Path("/usr/share/datasets/fashion-mnist"))
    x, y = load_fmnist()["fmnist"]
    assert x.shape == (70000, 1, 28, 28) and x.dtype == np.float32
    assert 0 <= x.min() and x.max() <= 1
    assert np.bincount(y).tolist() == [7000] * 10
