"""Real single-domain datasets read from torchvision's on-disk formats (downloaded by torchvision if allowed).

Every loader comes in two forms: ``load_<name>_splits`` returns the official splits
``{name: {"train": (x, y), "test": (x, y)}}`` and ``load_<name>`` pools them into ``{name: (x, y)}``
(pflnb re-splits per client). Images are float32 (N, C, H, W) in [0, 1], labels int64.

The files are read by the small readers below, not through torchvision's dataset classes (those check the
md5 of the original files); torchvision is used only to download. Set ``PFLNB_DOWNLOAD=0`` to never try.
"""

from __future__ import annotations

import bz2
import gzip
import os
import pickle
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

Arrays = tuple[np.ndarray, np.ndarray]
SplitArrays = dict[str, Arrays]

FASHION_MNIST_SYSTEM = Path("/usr/share/datasets/fashion-mnist")
_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


class DataUnavailable(FileNotFoundError):
    """A dataset's files were found nowhere and could not be downloaded."""


class DataFileError(ValueError):
    """A dataset file exists but cannot be read (truncated, corrupt or in another format)."""


@contextmanager
def reading(path: str | os.PathLike) -> Iterator[None]:
    """Turn any failure while reading ``path`` (except a missing file) into a DataFileError naming the file and
    what to do."""
    try:
        yield
    except (FileNotFoundError, DataFileError):
        raise
    except Exception as e:  # noqa: BLE001 - EOFError, BadGzipFile, zlib.error, UnpicklingError, MatReadError, ...
        raise DataFileError(
            f"{path} cannot be read ({type(e).__name__}: {e}); the file is truncated or corrupt: delete it and get it "
            "again (re-download it, or reinstall the package that provides it)"
        ) from e


def data_root(root: str | os.PathLike | None = None) -> Path | None:
    """The user's data folder: ``root`` if given, else ``$PFLNB_DATA``, else None."""
    if root is not None:
        return Path(root).expanduser()
    env = os.environ.get("PFLNB_DATA")
    return Path(env).expanduser() if env else None


def download_root(root: str | os.PathLike | None = None) -> Path:
    """Where downloads go: ``root``, ``$PFLNB_DATA``, the repository's (git-ignored) ``data/cache`` or ``~/.cache/pflnb``."""
    base = data_root(root)
    if base is not None:
        return base
    repo = Path(__file__).resolve().parents[2]
    if (repo / "data").is_dir() and (repo / "pflnb").is_dir():
        return repo / "data" / "cache"
    return Path.home() / ".cache" / "pflnb"


def download_allowed(download: bool = True) -> bool:
    """Whether a download may be tried: ``download`` and not ``PFLNB_DOWNLOAD=0``."""
    return bool(download) and os.environ.get("PFLNB_DOWNLOAD", "1").lower() not in ("0", "false", "no")


def to_float(images: np.ndarray) -> np.ndarray:
    """uint8 (or [0, 1] float) images to float32 in [0, 1]."""
    if images.dtype == np.uint8:
        x = images.astype(np.float32)
        return np.divide(x, np.float32(255.0), out=x)
    x = images.astype(np.float32, copy=False)
    return x / np.float32(255.0) if x.size and x.max() > 1.0 else x


def pool(splits: dict[str, SplitArrays]) -> dict[str, Arrays]:
    """Concatenate each domain's official train and test splits: {domain: (x, y)}."""
    out = {}
    for domain, parts in splits.items():
        xs, ys = zip(*(parts[s] for s in ("train", "test") if s in parts))
        out[domain] = (np.concatenate(xs), np.concatenate(ys))
    return out


# ----------------------------------------------------------------------------------------------- readers


def _finish(images: np.ndarray, raw: bool) -> np.ndarray:
    return np.ascontiguousarray(images) if raw else to_float(images)


def _open(path: Path):
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an IDX (MNIST "SN3 Pascal Vincent") file, gzipped or raw, into a numpy array."""
    with reading(path), _open(Path(path)) as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_DTYPES:
        raise ValueError(f"{path} is not an IDX file (bad magic number)")
    ndim = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    arr = np.frombuffer(data, dtype=_IDX_DTYPES[data[2]], offset=4 + 4 * ndim)
    if arr.size != int(np.prod(shape)):
        raise ValueError(f"{path}: header says shape {shape} but holds {arr.size} values")
    return arr.reshape(shape).astype(arr.dtype.newbyteorder("="))


def _idx_file(folder: Path, stem: str) -> Path:
    for name in (stem, stem + ".gz"):
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(folder / stem)


def read_mnist_folder(folder: str | os.PathLike, raw: bool = False) -> SplitArrays:
    """Read MNIST-format IDX files (train-/t10k-images-idx3-ubyte[.gz], ...-labels-idx1-ubyte) from ``folder``.

    ``raw``: keep the uint8 pixels (as every reader here); otherwise float32 in [0, 1].
    """
    folder = Path(folder)
    out = {}
    for split, prefix in (("train", "train"), ("test", "t10k")):
        x = read_idx(_idx_file(folder, f"{prefix}-images-idx3-ubyte"))
        y = read_idx(_idx_file(folder, f"{prefix}-labels-idx1-ubyte"))
        if x.ndim != 3 or len(x) != len(y):
            raise ValueError(f"{folder}: {prefix} images {x.shape} and labels {y.shape} do not match")
        out[split] = (_finish(x[:, None], raw), y.astype(np.int64))
    return out


def _unpickle(path: Path) -> dict:
    with reading(path), open(path, "rb") as f:
        d = pickle.load(f, encoding="latin1")
    return {k.decode() if isinstance(k, bytes) else k: v for k, v in d.items()}


def read_cifar_folder(folder: str | os.PathLike, fine: bool = False, raw: bool = False) -> SplitArrays:
    """Read CIFAR python pickles: cifar-10-batches-py (data_batch_1..5, test_batch) or cifar-100-python."""
    folder = Path(folder)
    files = (
        {"train": ["train"], "test": ["test"]}
        if fine
        else {
            "train": [f"data_batch_{i}" for i in range(1, 6)],
            "test": ["test_batch"],
        }
    )
    key = "fine_labels" if fine else "labels"
    out = {}
    for split, names in files.items():
        xs, ys = [], []
        for name in names:
            if not (folder / name).is_file():
                raise FileNotFoundError(folder / name)
            d = _unpickle(folder / name)
            xs.append(np.asarray(d["data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
            ys.append(np.asarray(d[key], dtype=np.int64))
        out[split] = (_finish(np.concatenate(xs), raw), np.concatenate(ys))
    return out


def read_svhn_folder(folder: str | os.PathLike, raw: bool = False) -> SplitArrays:
    """Read SVHN's train_32x32.mat and test_32x32.mat (X: (32, 32, 3, N) uint8, y: labels 1..10, 10 = digit 0)."""
    import scipy.io

    folder = Path(folder)
    out = {}
    for split in ("train", "test"):
        path = folder / f"{split}_32x32.mat"
        if not path.is_file():
            raise FileNotFoundError(path)
        with reading(path):
            mat = scipy.io.loadmat(path)
        y = mat["y"].astype(np.int64).reshape(-1)
        y[y == 10] = 0
        out[split] = (_finish(np.transpose(mat["X"], (3, 2, 0, 1)), raw), y)
    return out


def read_usps_folder(folder: str | os.PathLike, raw: bool = False) -> SplitArrays:
    """Read USPS libsvm files usps.bz2 / usps.t.bz2 (label 1..10, 256 values in [-1, 1]) as 16x16 images."""
    folder = Path(folder)
    out = {}
    for split, name in (("train", "usps.bz2"), ("test", "usps.t.bz2")):
        path = folder / name
        if not path.is_file():
            raise FileNotFoundError(path)
        with reading(path), bz2.open(path) as f:
            rows = [line.decode().split() for line in f if line.strip()]
        values = np.asarray([[v.split(":")[-1] for v in r[1:]] for r in rows], dtype=np.float32)
        images = ((values.reshape(-1, 16, 16) + 1) / 2 * 255).astype(np.uint8)  # torchvision's quantisation
        labels = np.asarray([int(float(r[0])) - 1 for r in rows], dtype=np.int64)
        out[split] = (_finish(images[:, None], raw), labels)
    return out


# ------------------------------------------------------------------------------------------ locate + load


def candidate_folders(root: str | os.PathLike | None, subdirs: Iterable[str], extra: Iterable[Path] = ()) -> list[Path]:
    """Folders to search: each subfolder of ``root`` and of ``$PFLNB_DATA``, then ``extra``."""
    bases = []
    if root is not None:
        bases.append(Path(root).expanduser())
    env = os.environ.get("PFLNB_DATA")
    if env and (root is None or Path(env).expanduser() != Path(root).expanduser()):
        bases.append(Path(env).expanduser())
    out = [b / s if s else b for b in bases for s in subdirs]
    return list(dict.fromkeys([*out, *extra]))


def _torchvision_download(name: str, target: Path) -> None:
    """Let torchvision download ``name`` into ``target`` (files in torchvision's layout)."""
    from torchvision import datasets

    target.mkdir(parents=True, exist_ok=True)
    if name == "svhn":
        for split in ("train", "test"):
            datasets.SVHN(str(target), split=split, download=True)
        return
    cls = {
        "fmnist": datasets.FashionMNIST,
        "mnist": datasets.MNIST,
        "usps": datasets.USPS,
        "cifar10": datasets.CIFAR10,
        "cifar100": datasets.CIFAR100,
    }[name]
    for train in (True, False):
        cls(str(target), train=train, download=True)


# name -> (subfolders of a data root to look in, reader, folder of a torchvision download under its root)
_SOURCES: dict[str, tuple[tuple[str, ...], Callable[..., SplitArrays], str]] = {
    "fmnist": (("", "fashion-mnist", "FashionMNIST/raw"), read_mnist_folder, "FashionMNIST/raw"),
    "mnist": (("", "mnist", "MNIST/raw"), read_mnist_folder, "MNIST/raw"),
    "svhn": (("", "svhn", "SVHN"), read_svhn_folder, ""),
    "usps": (("", "usps", "USPS"), read_usps_folder, ""),
    "cifar10": (
        ("cifar-10-batches-py", "cifar10/cifar-10-batches-py", "CIFAR10/cifar-10-batches-py"),
        read_cifar_folder,
        "cifar-10-batches-py",
    ),
    "cifar100": (
        ("cifar-100-python", "cifar100/cifar-100-python", "CIFAR100/cifar-100-python"),
        lambda p, raw=False: read_cifar_folder(p, fine=True, raw=raw),
        "cifar-100-python",
    ),
}


def load_splits_with_path(
    name: str, root: str | os.PathLike | None = None, download: bool = True, raw: bool = False
) -> tuple[dict[str, SplitArrays], str]:
    """Official splits of dataset ``name`` and the folder they were read from (DataUnavailable if none).

    ``raw``: images as stored (uint8) instead of float32 in [0, 1].
    """
    if name not in _SOURCES:
        raise ValueError(f"dataset must be one of {tuple(_SOURCES)}, got {name!r}")
    subdirs, reader, dl_sub = _SOURCES[name]
    target = download_root(root)
    extra = [FASHION_MNIST_SYSTEM] if name == "fmnist" else []
    extra += [target / s if s else target for s in subdirs]  # an earlier download
    tried: list[str] = []
    for folder in candidate_folders(root, subdirs, extra):
        try:
            return {name: reader(folder, raw=raw)}, str(folder)
        except FileNotFoundError:
            tried.append(str(folder))
    if download_allowed(download):
        try:
            _torchvision_download(name, target)
            folder = target / dl_sub if dl_sub else target
            return {name: reader(folder, raw=raw)}, str(folder)
        except Exception as e:  # noqa: BLE001 - any download failure means "unavailable"
            tried.append(f"torchvision download into {target} ({type(e).__name__}: {e})")
    else:
        tried.append("torchvision download (disabled: download=False or PFLNB_DOWNLOAD=0)")
    raise DataUnavailable(
        f"{name}: no data found. Tried:\n  - " + "\n  - ".join(tried) + "\nPut the files in torchvision's layout "
        "under a folder and pass it as root (data_root) or set PFLNB_DATA."
    )


def _pooled(name: str, root: str | os.PathLike | None, download: bool) -> dict[str, Arrays]:
    return pool(load_splits_with_path(name, root, download)[0])


def load_fmnist_splits(root: str | os.PathLike | None = None, download: bool = True) -> dict[str, SplitArrays]:
    """Fashion-MNIST official splits {"fmnist": {"train", "test"}}: (N, 1, 28, 28) float32 in [0, 1]."""
    return load_splits_with_path("fmnist", root, download)[0]


def load_fmnist(root: str | os.PathLike | None = None, download: bool = True) -> dict[str, Arrays]:
    """Fashion-MNIST, train and test pooled: {"fmnist": (x (70000, 1, 28, 28), y)}.

    Looks in ``root``, ``$PFLNB_DATA`` (also ``fashion-mnist/`` and ``FashionMNIST/raw/`` below them),
    /usr/share/datasets/fashion-mnist, then tries torchvision's download; raises DataUnavailable.
    """
    return _pooled("fmnist", root, download)


def load_mnist_splits(root: str | os.PathLike | None = None, download: bool = True) -> dict[str, SplitArrays]:
    """MNIST official splits {"mnist": {"train", "test"}}: (N, 1, 28, 28) float32 in [0, 1]."""
    return load_splits_with_path("mnist", root, download)[0]


def load_mnist(root: str | os.PathLike | None = None, download: bool = True) -> dict[str, Arrays]:
    """MNIST, train and test pooled: {"mnist": (x, y)}."""
    return _pooled("mnist", root, download)


def load_svhn_splits(root: str | os.PathLike | None = None, download: bool = True) -> dict[str, SplitArrays]:
    """SVHN official splits {"svhn": {"train", "test"}} (no "extra"): (N, 3, 32, 32) float32 in [0, 1]."""
    return load_splits_with_path("svhn", root, download)[0]


def load_svhn(root: str | os.PathLike | None = None, download: bool = True) -> dict[str, Arrays]:
    """SVHN, train and test pooled: {"svhn": (x, y)}."""
    return _pooled("svhn", root, download)


def load_usps_splits(root: str | os.PathLike | None = None, download: bool = True) -> dict[str, SplitArrays]:
    """USPS official splits {"usps": {"train", "test"}}: (N, 1, 16, 16) float32 in [0, 1]."""
    return load_splits_with_path("usps", root, download)[0]


def load_usps(root: str | os.PathLike | None = None, download: bool = True) -> dict[str, Arrays]:
    """USPS, train and test pooled: {"usps": (x, y)}."""
    return _pooled("usps", root, download)


def load_cifar10_splits(root: str | os.PathLike | None = None, download: bool = True) -> dict[str, SplitArrays]:
    """CIFAR-10 official splits {"cifar10": {"train", "test"}}: (N, 3, 32, 32) float32 in [0, 1]."""
    return load_splits_with_path("cifar10", root, download)[0]


def load_cifar10(root: str | os.PathLike | None = None, download: bool = True) -> dict[str, Arrays]:
    """CIFAR-10, train and test pooled: {"cifar10": (x, y)}."""
    return _pooled("cifar10", root, download)


def load_cifar100_splits(root: str | os.PathLike | None = None, download: bool = True) -> dict[str, SplitArrays]:
    """CIFAR-100 official splits {"cifar100": {"train", "test"}} (fine labels): (N, 3, 32, 32) float32."""
    return load_splits_with_path("cifar100", root, download)[0]


def load_cifar100(root: str | os.PathLike | None = None, download: bool = True) -> dict[str, Arrays]:
    """CIFAR-100, train and test pooled: {"cifar100": (x, y)} (fine labels)."""
    return _pooled("cifar100", root, download)
