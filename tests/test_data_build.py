"""build_federated / check_spec / resolve_dataset: determinism, disjointness, manifests, names, errors."""

import dataclasses

import numpy as np
import pytest
import torch

from pflnb.data import (
    DataSpec,
    DataUnavailable,
    build_federated,
    check_spec,
    clear_cache,
    client_indices,
    fake,
    load_source,
    resolve_dataset,
    sources,
)


@pytest.fixture(autouse=True)
def offline(monkeypatch, tmp_path):
    monkeypatch.setenv("PFLNB_DOWNLOAD", "0")
    monkeypatch.delenv("PFLNB_DATA", raising=False)
    monkeypatch.setattr(sources, "FASHION_MNIST_SYSTEM", tmp_path / "no-system-fmnist")


def all_clients(fd):
    return fd.clients + fd.unseen


def assert_disjoint(fd):
    """Each client split's tensors are the source images at its own positions; the positions are disjoint."""
    spec = DataSpec(**{**fd.info["spec"], "fractions": tuple(fd.info["spec"]["fractions"])})
    src = load_source(spec.dataset, spec.image_size, spec.data_root, fd.info["seed"])
    n = 0
    for c in all_clients(fd):
        for s in ("train", "val", "test"):
            idx = client_indices(fd, c.cid, s)
            assert np.array_equal(c.split(s).x.numpy(), src.images(idx))
            assert np.array_equal(c.split(s).y.numpy(), src.y[idx])
            n += len(idx)
    assert n == (fd.info["assignment"] >= 0).sum() == fd.manifest().total.sum()
    return np.flatnonzero(fd.info["assignment"] >= 0)


def test_default_spec_by_domain():
    fd = build_federated(DataSpec(), seed=0)
    assert fd.name == "digits5-lite" and fd.num_classes == 10 and fd.input_shape == (3, 16, 16)
    assert [c.name for c in fd.clients] == ["mnist", "svhn", "usps", "synth", "mnistm"]
    assert [c.domain for c in fd.clients] == [c.name for c in fd.clients]
    assert [c.cid for c in fd.clients] == list(range(5))
    assert len(assert_disjoint(fd)) == 1797
    for c in fd.clients:
        for s in ("train", "val", "test"):
            sp = c.split(s)
            assert sp.x.dtype == torch.float32 and sp.y.dtype == torch.int64 and len(sp) > 0
            assert sp.x.shape[1:] == (3, 16, 16) and 0 <= sp.x.min() and sp.x.max() <= 1
        assert abs(len(c.train) / (len(c.train) + len(c.val) + len(c.test)) - 0.6) < 0.01
    assert fd.info["n_per_domain"] == {"mnist": 360, "svhn": 360, "usps": 359, "synth": 359, "mnistm": 359}
    assert "no Normalize" in fd.info["image_normalisation"] and "load_digits" in fd.info["source"]


def test_manifest_totals_match_sizes():
    fd = build_federated(DataSpec(partition="dirichlet", num_clients=6, alpha=0.3, unseen_clients=2), seed=1)
    m = fd.manifest()
    assert len(m) == 3 * 8
    for c in all_clients(fd):
        for s in ("train", "val", "test"):
            row = m[(m.cid == c.cid) & (m.split == s)].iloc[0]
            assert row.total == len(c.split(s)) == sum(row[k] for k in range(10))
            assert row[list(range(10))].tolist() == torch.bincount(c.split(s).y, minlength=10).tolist()
    assert m.total.sum() == 1797


@pytest.mark.parametrize("partition", ["iid", "dirichlet", "pathological", "by-domain", "domain-dirichlet"])
def test_same_seed_identical_other_seed_different(partition):
    spec = DataSpec(partition=partition, num_clients=10, image_size=8, alpha=0.5, min_samples=5)
    a, b, c = build_federated(spec, 0), build_federated(spec, 0), build_federated(spec, 1)
    for ca, cb in zip(a.clients, b.clients):
        for s in ("train", "val", "test"):
            assert torch.equal(ca.split(s).x, cb.split(s).x) and torch.equal(ca.split(s).y, cb.split(s).y)
    assert any(not torch.equal(ca.train.x, cc.train.x) for ca, cc in zip(a.clients, c.clients))
    assert_disjoint(a)


def test_names_and_domains():
    fd = build_federated(DataSpec(partition="by-domain", num_clients=10), 0)
    assert [c.name for c in fd.clients][:4] == ["mnist/0", "mnist/1", "svhn/0", "svhn/1"]
    assert all(c.domain == c.name.split("/")[0] for c in fd.clients)
    fd = build_federated(DataSpec(partition="iid", num_clients=8), 0)
    assert fd.clients[7].name == "client 07" and all(c.domain == "digits5-lite" for c in fd.clients)


def test_by_domain_one_domain_each_via_indices():
    fd = build_federated(DataSpec(partition="domain-dirichlet", num_clients=10, alpha=0.5, min_samples=5), 0)
    lens = fd.info["n_per_domain"]
    bounds = np.cumsum([0, *lens.values()])
    for c in fd.clients:
        idx = np.concatenate([client_indices(fd, c.cid, s) for s in ("train", "val", "test")])
        dom = np.searchsorted(bounds, idx, side="right") - 1
        assert len(np.unique(dom)) == 1 and list(lens)[dom[0]] == c.domain


def test_pathological_k_classes_and_dirichlet_min_samples():
    fd = build_federated(DataSpec(partition="pathological", num_clients=10, classes_per_client=2), 0)
    for c in fd.clients:
        ys = torch.cat([c.train.y, c.val.y, c.test.y])
        assert len(torch.unique(ys)) == 2
    fd = build_federated(DataSpec(partition="dirichlet", num_clients=10, alpha=0.1, min_samples=40), 0)
    assert min(len(c.train) + len(c.val) + len(c.test) for c in fd.clients) >= 40
    with pytest.raises(ValueError, match="min_samples=200"):
        build_federated(DataSpec(partition="pathological", num_clients=10, min_samples=200), 0)


def test_unseen_clients_held_out():
    fd = build_federated(DataSpec(partition="by-domain", num_clients=4, unseen_clients=1), 3)
    assert fd.num_clients == 4 and len(fd.unseen) == 1
    assert [c.cid for c in fd.clients + fd.unseen] == list(range(5))
    names = {c.name for c in fd.clients + fd.unseen}
    assert names == {"mnist", "svhn", "usps", "synth", "mnistm"}
    assert fd.manifest().query("group == 'unseen'").cid.unique().tolist() == [4]
    assert_disjoint(fd)


def test_max_samples_class_stratified():
    fd = build_federated(DataSpec(partition="iid", num_clients=4, max_samples=500), 0)
    assert fd.info["n_used"] == 500 and fd.manifest().total.sum() == 500
    counts = fd.manifest()[list(range(10))].sum()
    assert counts.max() - counts.min() <= 5


@pytest.mark.parametrize(
    "spec", [DataSpec(), DataSpec(partition="dirichlet", num_clients=6, alpha=0.3)], ids=["by-domain", "dir"]
)
def test_train_ratio_thins_train_class_stratified_and_keeps_val_and_test(spec):
    full = build_federated(spec, 3)
    half = build_federated(dataclasses.replace(spec, train_ratio=0.5), 3)
    assert_disjoint(half)
    assert [c.name for c in half.clients] == [c.name for c in full.clients]
    for a, b in zip(full.clients, half.clients):
        for s in ("val", "test"):  # the evaluation splits are the full build's, sample for sample
            assert torch.equal(a.split(s).x, b.split(s).x) and torch.equal(a.split(s).y, b.split(s).y)
        kept, was = client_indices(half, b.cid, "train"), client_indices(full, a.cid, "train")
        assert set(kept) <= set(was) and len(kept) == round(0.5 * len(was))
        n_was = np.bincount(a.train.y.numpy(), minlength=10)
        n_kept = np.bincount(b.train.y.numpy(), minlength=10)
        assert np.all(np.abs(n_kept - 0.5 * n_was) < 1) and n_kept.sum() == len(kept)  # per class: γ·n, rounded
    again = build_federated(dataclasses.replace(spec, train_ratio=0.5), 3)
    assert all(torch.equal(a.train.x, b.train.x) for a, b in zip(half.clients, again.clients))


def test_noise_grows_linearly_over_the_clients():
    spec = DataSpec(partition="iid", num_clients=5, max_samples=1500)
    clean, noisy = build_federated(spec, 1), build_federated(dataclasses.replace(spec, noise=0.3), 1)
    for c, (a, b) in enumerate(zip(clean.clients, noisy.clients)):
        expected = 0.3 * c / 4  # σ_i = σ_M · i / (N − 1), images in [0, 1]
        for s in ("train", "val", "test"):
            assert torch.equal(a.split(s).y, b.split(s).y)
            d = (b.split(s).x - a.split(s).x).double()
            if c == 0:
                assert torch.equal(d, torch.zeros_like(d))
            else:
                assert abs(float(d.std()) / expected - 1) < 0.05 and abs(float(d.mean())) < 0.05 * expected
    again = build_federated(dataclasses.replace(spec, noise=0.3), 1)
    assert all(torch.equal(a.train.x, b.train.x) for a, b in zip(noisy.clients, again.clients))
    with pytest.raises(ValueError, match="noise"):
        check_spec(DataSpec(noise=-1.0))
    with pytest.raises(ValueError, match="unseen client"):
        check_spec(DataSpec(partition="iid", noise=5.0, unseen_clients=1))


def test_train_ratio_keeps_existing_run_keys_and_rejects_bad_values():
    from pflnb.experiments import ExperimentConfig

    cfg = ExperimentConfig()
    assert cfg.replace(train_ratio=1.0).key() == cfg.key() != cfg.replace(train_ratio=0.5).key()
    assert cfg.replace(noise=0.0).key() == cfg.key() != cfg.replace(noise=5.0).key()
    assert "train_ratio" not in cfg.to_dict() or cfg.to_dict()["train_ratio"] == 1.0
    for bad in (0.0, 1.5, -0.2):
        with pytest.raises(ValueError, match="train_ratio"):
            check_spec(DataSpec(train_ratio=bad))


@pytest.mark.parametrize("size", [8, 16, 28, 32])
def test_image_sizes(size):
    fd = build_federated(DataSpec(image_size=size), 0)
    assert fd.input_shape == (3, size, size) and fd.clients[0].train.x.shape[1:] == (3, size, size)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (dict(dataset="mnist3"), "dataset must be one of .*digits5-lite"),
        (dict(partition="shards"), "partition must be one of .*by-domain"),
        (dict(alpha=0.0), "alpha"),
        (dict(alpha=-0.5), "alpha"),
        (dict(num_clients=0), "num_clients"),
        (dict(unseen_clients=-1), "unseen_clients"),
        (dict(image_size=12), r"image_size for digits5-lite must be one of \(8, 16, 28, 32\)"),
        (dict(fractions=(0.6, 0.2, 0.3)), "fractions"),
        (dict(fractions=(1.0, 0.0, 0.0)), "fractions"),
        (dict(num_clients=7), "multiple of the 5 domains"),
        (dict(num_clients=4, unseen_clients=2), "multiple of the 5 domains"),
        (dict(partition="pathological", num_clients=5, classes_per_client=11), r"classes_per_client .*\[1, 10\]"),
        (dict(partition="iid", max_samples=10), "max_samples"),
        (dict(min_samples=-1), "min_samples"),
        (dict(dataset="office-caltech10", num_clients=5), "multiple of the 4 domains"),
        (dict(dataset="fmnist", image_size=2), "image_size"),
    ],
)
def test_check_spec_errors(change, match):
    spec = dataclasses.replace(DataSpec(), **change)
    with pytest.raises(ValueError, match=match):
        check_spec(spec)
    with pytest.raises(ValueError, match=match):  # raised before any data is loaded
        build_federated(spec, 0)


def test_too_many_clients_and_dirichlet_impossible():
    with pytest.raises(ValueError, match="num_clients \\+ unseen_clients = 700 clients need at least 2100"):
        build_federated(DataSpec(partition="iid", num_clients=700, min_samples=0), 0)
    with pytest.raises(ValueError, match="max_redraws"):
        build_federated(DataSpec(partition="dirichlet", num_clients=20, alpha=0.01, min_samples=85), 0)


def test_fmnist_build_from_tiny_idx(tmp_path):
    fake.write_mnist_folder(tmp_path / "fashion-mnist", n_train=200, n_test=50)
    spec = DataSpec(dataset="fmnist", partition="dirichlet", num_clients=5, image_size=None, data_root=str(tmp_path))
    fd = build_federated(spec, 0)
    assert fd.input_shape == (1, 28, 28) and fd.manifest().total.sum() == 250
    assert fd.info["source"] == str(tmp_path / "fashion-mnist")
    assert fd.info["n_per_domain"] == {"fmnist": 250}
    assert all(c.domain == "fmnist" and c.name.startswith("client ") for c in fd.clients)
    small = build_federated(dataclasses.replace(spec, image_size=14), 0)
    assert small.clients[0].train.x.shape[1:] == (1, 14, 14)
    other = build_federated(spec, 1)  # same files, another seed: another partition
    assert not np.array_equal(fd.info["assignment"], other.info["assignment"])
    assert_disjoint(other)
    one = build_federated(dataclasses.replace(spec, partition="by-domain", num_clients=1), 0)
    assert one.clients[0].name == "fmnist"


def test_digits5_by_domain_keeps_official_test(tmp_path):
    truth = fake.write_fedbn_digits5(tmp_path, n_per_part=12, n_test=6)
    spec = DataSpec(dataset="digits5", partition="by-domain", num_clients=5, image_size=None, data_root=str(tmp_path))
    fd = build_federated(spec, 0)
    assert fd.info["official_test"] and fd.input_shape == (3, 28, 28)
    for c in fd.clients:
        assert len(c.test) == 6 and len(c.train) + len(c.val) == 12
        assert sorted(c.test.y.tolist()) == sorted(truth[c.name]["test"][1].tolist())
    assert_disjoint(fd)
    fd = build_federated(dataclasses.replace(spec, partition="iid", min_samples=5), 0)  # pooled and re-split
    assert not fd.info["official_test"] and fd.manifest().total.sum() == 5 * 18


def test_office_build(tmp_path):
    fake.write_fedbn_sites(tmp_path, "office", n_train=6, n_test=3)
    spec = DataSpec(dataset="office-caltech10", num_clients=4, image_size=8, min_samples=3, data_root=str(tmp_path))
    fd = build_federated(spec, 0)
    assert [c.name for c in fd.clients] == ["amazon", "caltech", "dslr", "webcam"]
    assert fd.input_shape == (3, 8, 8) and all(len(c.test) == 3 for c in fd.clients)
    assert_disjoint(fd)


def test_resolve_dataset_fallback(tmp_path, capsys):
    clear_cache()
    spec = DataSpec(dataset="fmnist", partition="dirichlet", num_clients=5, image_size=None, data_root=str(tmp_path))
    with pytest.raises(DataUnavailable, match="fmnist"):
        resolve_dataset(spec)
    with pytest.warns(UserWarning, match="falling back to digits5-lite"):
        new = resolve_dataset(spec, fallback=True)
    assert new.dataset == "digits5-lite" and new.image_size == 16 and new.partition == "dirichlet"
    assert "falling back" in capsys.readouterr().out
    fake.write_mnist_folder(tmp_path / "FashionMNIST" / "raw", n_train=30, n_test=10)
    assert resolve_dataset(spec) == spec
    assert resolve_dataset(DataSpec()) == DataSpec()
