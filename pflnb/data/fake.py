"""Write tiny datasets in the exact on-disk formats the loaders read (for tests and offline smoke runs).

Each writer returns the arrays it wrote as uint8 images in the loaders' (N, C, H, W) layout, with labels,
so a test can compare what a loader reads against the truth.
"""

from __future__ import annotations

import bz2
import gzip
import os
import pickle
from pathlib import Path

import numpy as np

from pflnb.data.fedbn import DIGITS5_FOLDERS, DOMAINNET_CLASSES, DOMAINNET_SITES, OFFICE_CLASSES, OFFICE_SITES

Truth = dict[str, tuple[np.ndarray, np.ndarray]]


def _labels(n: int, num_classes: int, rng: np.random.Generator) -> np.ndarray:
    """Labels covering every class when n allows, in random order."""
    return rng.permutation(np.arange(n) % num_classes).astype(np.int64)


def write_idx(path: str | os.PathLike, array: np.ndarray) -> None:
    """Write a uint8 array as an IDX file (gzipped when the name ends in .gz)."""
    a = np.ascontiguousarray(array, dtype=np.uint8)
    header = bytes([0, 0, 0x08, a.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in a.shape)
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wb") as f:
        f.write(header + a.tobytes())


def write_mnist_folder(folder: str | os.PathLike, n_train: int = 30, n_test: int = 10, gz: bool = True, seed: int = 0) -> Truth:
    """MNIST / Fashion-MNIST IDX files: {train,t10k}-images-idx3-ubyte, {train,t10k}-labels-idx1-ubyte."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    out = {}
    for split, prefix, n in (("train", "train", n_train), ("test", "t10k", n_test)):
        x = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        y = _labels(n, 10, rng)
        ext = ".gz" if gz else ""
        write_idx(folder / f"{prefix}-images-idx3-ubyte{ext}", x)
        write_idx(folder / f"{prefix}-labels-idx1-ubyte{ext}", y.astype(np.uint8))
        out[split] = (x[:, None], y)
    return out


def write_cifar_folder(
    folder: str | os.PathLike, n_per_batch: int = 4, fine: bool = False, bytes_keys: bool = False, seed: int = 0
) -> Truth:
    """CIFAR python pickles: data_batch_1..5 / test_batch / batches.meta, or train / test / meta (CIFAR-100)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    num_classes = 100 if fine else 10
    key = "fine_labels" if fine else "labels"

    def dump(name: str, d: dict) -> None:
        with open(folder / name, "wb") as f:
            pickle.dump({k.encode() if bytes_keys else k: v for k, v in d.items()}, f, protocol=2)

    names = (
        {"train": ["train"], "test": ["test"]}
        if fine
        else {
            "train": [f"data_batch_{i}" for i in range(1, 6)],
            "test": ["test_batch"],
        }
    )
    out = {}
    for split, files in names.items():
        xs, ys = [], []
        for name in files:
            x = rng.integers(0, 256, size=(n_per_batch, 3, 32, 32), dtype=np.uint8)
            y = _labels(n_per_batch, num_classes, rng)
            d = {"data": x.reshape(n_per_batch, 3072), key: y.tolist(), "batch_label": name}
            if fine:
                d["coarse_labels"] = (y // 5).tolist()
            dump(name, d)
            xs.append(x)
            ys.append(y)
        out[split] = (np.concatenate(xs), np.concatenate(ys))
    if fine:
        dump("meta", {"fine_label_names": [f"c{i}" for i in range(100)], "coarse_label_names": []})
    else:
        dump("batches.meta", {"label_names": [f"c{i}" for i in range(10)], "num_cases_per_batch": n_per_batch})
    return out


def write_svhn_folder(folder: str | os.PathLike, n_train: int = 20, n_test: int = 10, seed: int = 0) -> Truth:
    """SVHN .mat files train_32x32.mat / test_32x32.mat: X (32, 32, 3, N) uint8, y (N, 1) in 1..10 (10 = 0)."""
    import scipy.io

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    out = {}
    for split, n in (("train", n_train), ("test", n_test)):
        x = rng.integers(0, 256, size=(n, 3, 32, 32), dtype=np.uint8)
        y = _labels(n, 10, rng)
        mat_y = np.where(y == 0, 10, y).astype(np.uint8)[:, None]
        scipy.io.savemat(folder / f"{split}_32x32.mat", {"X": x.transpose(2, 3, 1, 0), "y": mat_y})
        out[split] = (x, y)
    return out


def write_usps_folder(folder: str | os.PathLike, n_train: int = 20, n_test: int = 10, seed: int = 0) -> Truth:
    """USPS libsvm bz2 files usps.bz2 / usps.t.bz2: "label 1:v ... 256:v", labels 1..10, values in [-1, 1]."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    out = {}
    for split, name, n in (("train", "usps.bz2", n_train), ("test", "usps.t.bz2", n_test)):
        x = rng.integers(0, 256, size=(n, 16, 16), dtype=np.uint8)
        y = _labels(n, 10, rng)
        values = x.reshape(n, 256).astype(np.float64) / 255 * 2 - 1
        lines = [
            f"{label + 1} " + " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(row)) + "\n" for label, row in zip(y, values)
        ]
        with bz2.open(folder / name, "wb") as f:
            f.write("".join(lines).encode())
        out[split] = (x[:, None], y)
    return out


_DIGITS5_SHAPES = {"mnist": (28, 28), "svhn": (32, 32, 3), "usps": (16, 16), "synth": (32, 32, 3), "mnistm": (28, 28, 3)}


def write_fedbn_digits5(
    root: str | os.PathLike, n_per_part: int = 6, n_test: int = 8, n_parts: int = 10, seed: int = 0
) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """FedBN Digits5: {MNIST,...}/partitions/train_part{k}.pkl and {domain}/test.pkl, pickled (images, labels).

    MNIST's files are written with numpy (object array, read back by np.load), the others with pickle.
    Returns {domain: {"parts": [(images, labels), ...], "test": (images, labels)}} as written.
    """
    root = Path(root)
    rng = np.random.default_rng(seed)
    out: dict = {}
    for domain, folder in DIGITS5_FOLDERS.items():
        d = root / folder / "partitions"
        d.mkdir(parents=True, exist_ok=True)
        shape = _DIGITS5_SHAPES[domain]

        def dump(path: Path, x: np.ndarray, y: np.ndarray, domain: str = domain) -> None:
            with open(path, "wb") as f:
                if domain == "mnist":
                    obj = np.empty(2, dtype=object)
                    obj[0], obj[1] = x, y
                    np.save(f, obj, allow_pickle=True)
                else:
                    pickle.dump((x, y), f)

        parts = []
        for k in range(n_parts):
            x = rng.integers(0, 256, size=(n_per_part, *shape), dtype=np.uint8)
            y = _labels(n_per_part, 10, rng).astype(np.float64)  # FedBN's labels are not always ints
            dump(d / f"train_part{k}.pkl", x, y)
            parts.append((x, y))
        xt = rng.integers(0, 256, size=(n_test, *shape), dtype=np.uint8)
        yt = _labels(n_test, 10, rng)
        dump(root / folder / "test.pkl", xt, yt)
        out[domain] = {"parts": parts, "test": (xt, yt)}
    return out


def write_fedbn_sites(
    root: str | os.PathLike, benchmark: str = "office", n_train: int = 4, n_test: int = 2, seed: int = 0
) -> dict[str, dict[str, tuple[list[str], list[str]]]]:
    """Office-Caltech10 / DomainNet-10 file lists ({site}_{train,test}.pkl) and tiny PNGs under ``root``.

    Images alternate RGB, grey (L) and RGBA PNGs of random sizes; paths are relative to ``root``.
    Returns {site: {split: (paths, text labels)}}.
    """
    from PIL import Image

    root = Path(root)
    folder, sites, classes = (
        ("office_caltech_10", OFFICE_SITES, OFFICE_CLASSES)
        if benchmark == "office"
        else ("DomainNet", DOMAINNET_SITES, DOMAINNET_CLASSES)
    )
    (root / folder).mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    out: dict = {}
    count = 0
    for site in sites:
        out[site] = {}
        for split, n in (("train", n_train), ("test", n_test)):
            paths, labels = [], []
            for i in range(n):
                label = classes[(i + count) % len(classes)]
                rel = f"{folder}/{site}/{label}/{split}_{i:03d}.png"
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                h, w = (int(v) for v in rng.integers(6, 20, size=2))
                channels = (3, 1, 4)[count % 3]  # RGB, L, RGBA
                pix = rng.integers(0, 256, size=(h, w, channels), dtype=np.uint8)
                Image.fromarray(pix[..., 0] if channels == 1 else pix).save(root / rel)
                paths.append(rel)
                labels.append(label)
                count += 1
            with open(root / folder / f"{site}_{split}.pkl", "wb") as f:
                pickle.dump((paths, labels), f)
            out[site][split] = (paths, labels)
    return out
