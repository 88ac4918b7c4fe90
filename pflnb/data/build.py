"""DataSpec + seed -> FederatedDataset: load (cached), subsample, partition, hold out, split per client."""

from __future__ import annotations

import dataclasses
import os
import warnings
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

from pflnb.data import digits5_lite, digits_shift, fedbn, partition, sources
from pflnb.data.federated import SPLITS, ClientData, FederatedDataset, Split
from pflnb.data.sources import DataUnavailable
from pflnb.data.spec import DATASETS, DataSpec
from pflnb.fields import check_fields

DOMAINS: dict[str, tuple[str, ...]] = {
    "digits5-lite": digits5_lite.DOMAINS,
    "digits-shift": digits_shift.DOMAINS,
    "digits5": tuple(fedbn.DIGITS5_FOLDERS),
    "office-caltech10": fedbn.OFFICE_SITES,
    "domainnet10": fedbn.DOMAINNET_SITES,
}
NUM_CLASSES = {name: 100 if name == "cifar100" else 10 for name in DATASETS}
RENDERED = ("digits5-lite", "digits-shift")  # embedded, rendered from a seed: nothing to load
OFFICIAL_TEST = ("digits5", "office-caltech10", "domainnet10")  # by-domain keeps their official test split
NORMALISATION = "none: pixel values in [0, 1] (no Normalize)"
_SEED_TAG = 0xDA7A


def domains_of(dataset: str) -> tuple[str, ...]:
    """Domain names of ``dataset`` (a single-domain dataset has one domain named after it)."""
    return DOMAINS.get(dataset, (dataset,))


def _is_int(v: object) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def check_spec(spec: DataSpec) -> None:
    """Validate a DataSpec without loading data; raise ValueError naming the parameter and allowed values."""
    check_fields(spec)  # each field's declared values (DataSpec)
    partition.check_fractions(spec.fractions)
    if spec.noise > 0 and spec.unseen_clients:
        raise ValueError("noise: the noise level of an unseen client is not defined (App. F.3); use unseen_clients=0")
    num_classes = NUM_CLASSES[spec.dataset]
    if spec.partition == "pathological" and (
        not _is_int(spec.classes_per_client) or not 1 <= spec.classes_per_client <= num_classes
    ):
        raise ValueError(
            f"classes_per_client must be an integer in [1, {num_classes}] (num_classes of {spec.dataset}), "
            f"got {spec.classes_per_client!r}"
        )
    if spec.dataset == "digits5-lite":
        digits5_lite.check_image_size(spec.image_size)
    elif spec.dataset == "digits-shift":
        digits_shift.check_image_size(spec.image_size)
    elif spec.image_size is not None and (not _is_int(spec.image_size) or spec.image_size < 4):
        raise ValueError(f"image_size must be None (native) or an integer >= 4, got {spec.image_size!r}")
    total = spec.num_clients + spec.unseen_clients
    if spec.max_samples is not None and (not _is_int(spec.max_samples) or spec.max_samples < 3 * total):
        raise ValueError(
            f"max_samples must be None or an integer >= 3 * (num_clients + unseen_clients) = {3 * total}, "
            f"got {spec.max_samples!r}"
        )
    if spec.partition in ("by-domain", "domain-dirichlet"):
        doms = domains_of(spec.dataset)
        if total % len(doms):
            raise ValueError(
                f"partition {spec.partition!r} needs num_clients + unseen_clients ({spec.num_clients} + "
                f"{spec.unseen_clients}) to be a multiple of the {len(doms)} domains of {spec.dataset} {doms}"
            )


# ------------------------------------------------------------------------------------------------ source


@dataclass(frozen=True)
class Source:
    """A loaded dataset, all domains pooled: images, labels, domain ids and official-test flags."""

    name: str
    x: np.ndarray  # (N, C, H, W): uint8 as stored (real data at native size) or float32 in [0, 1]
    y: np.ndarray  # (N,) int64
    domain: np.ndarray  # (N,) int64 index into ``domains``
    domains: tuple[str, ...]
    is_test: np.ndarray | None  # (N,) bool where the dataset has an official test split we keep
    num_classes: int
    path: str

    def images(self, idx: np.ndarray) -> np.ndarray:
        """Images at positions ``idx`` as float32 in [0, 1]."""
        x = self.x[idx]
        return sources.to_float(x) if x.dtype == np.uint8 else x.astype(np.float32, copy=False)

    def n_per_domain(self) -> dict[str, int]:
        """Number of samples of each domain."""
        counts = np.bincount(self.domain, minlength=len(self.domains))
        return {d: int(c) for d, c in zip(self.domains, counts)}


def _resize(x: np.ndarray, size: int | None) -> np.ndarray:
    if size is None or x.shape[-2:] == (size, size):
        return x
    chunks = [fedbn.resize_images(x[i : i + 8192], size) for i in range(0, len(x), 8192)]
    return np.concatenate(chunks) if chunks else x


def _from_domains(name: str, parts: dict, path: str, size: int | None, with_splits: bool, keep_test: bool) -> Source:
    """Pool ``{domain: (x, y)}`` or ``{domain: {"train": (x, y), "test": (x, y)}}`` into one Source."""
    xs, ys, ds, ts = [], [], [], []
    for k, val in enumerate(parts.values()):
        items = [(val[s], s == "test") for s in ("train", "test")] if with_splits else [(val, False)]
        for (x, y), is_test in items:
            xs.append(x)
            ys.append(np.asarray(y, dtype=np.int64))
            ds.append(np.full(len(y), k, dtype=np.int64))
            ts.append(np.full(len(y), is_test))
    x = xs[0] if len(xs) == 1 else np.concatenate(xs)
    if x.dtype != np.uint8 or (size is not None and x.shape[-2:] != (size, size)):
        x = _resize(np.ascontiguousarray(sources.to_float(x)), size)  # uint8 stays (4x smaller), floats on demand
    src = Source(
        name=name,
        x=np.ascontiguousarray(x),
        y=np.concatenate(ys),
        domain=np.concatenate(ds),
        domains=tuple(parts),
        is_test=np.concatenate(ts) if keep_test else None,
        num_classes=NUM_CLASSES[name],
        path=path,
    )
    for arr in (src.x, src.y, src.domain, src.is_test):
        if arr is not None:
            arr.flags.writeable = False
    return src


@lru_cache(maxsize=4)
def _cached_source(dataset: str, image_size: int | None, root: str | None, seed: int | None, download: bool) -> Source:
    if dataset == "digits5-lite":
        parts = digits5_lite.load_digits5_lite(digits5_lite.check_image_size(image_size), int(seed or 0))
        return _from_domains(dataset, parts, digits5_lite.SOURCE, None, False, False)
    if dataset == "digits-shift":
        parts = digits_shift.load_digits_shift(digits_shift.check_image_size(image_size), int(seed or 0))
        return _from_domains(dataset, parts, digits_shift.SOURCE, None, False, False)
    if dataset in OFFICIAL_TEST:
        path = str(fedbn.locate(dataset, root))
        if dataset == "digits5":
            parts = fedbn.load_digits5(root, image_size=image_size or 28)
        elif dataset == "office-caltech10":
            parts = fedbn.load_office_caltech10(root, image_size=image_size or 256)
        else:
            parts = fedbn.load_domainnet10(root, image_size=image_size or 256)
        return _from_domains(dataset, parts, path, None, True, True)
    splits, path = sources.load_splits_with_path(dataset, root, download=download, raw=True)
    return _from_domains(dataset, splits, path, image_size, True, False)  # train + test pooled, re-split


def load_source(
    dataset: str, image_size: int | None = None, root: str | None = None, seed: int = 0, download: bool = True
) -> Source:
    """Load ``dataset`` (all domains pooled), cached in memory per (dataset, image_size, root, seed if rendered)."""
    if dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {DATASETS}, got {dataset!r}")
    root = root if root is not None else os.environ.get("PFLNB_DATA") or None
    seed_key = int(seed) if dataset in RENDERED else None
    return _cached_source(dataset, image_size, root, seed_key, bool(download))


def clear_cache() -> None:
    """Forget every cached source."""
    _cached_source.cache_clear()


# ------------------------------------------------------------------------------------------------- build


def _tensors(src: Source, idx: np.ndarray) -> Split:
    return Split(torch.from_numpy(np.ascontiguousarray(src.images(idx))), torch.from_numpy(src.y[idx].copy()))


def _noisy(splits: list[Split], sigma: float, seed: int, cid: int) -> list[Split]:
    """``splits`` with additive Gaussian noise of standard deviation ``sigma`` (image scale), one draw per sample from
    the client's own stream."""
    gen = torch.Generator().manual_seed(int(np.random.SeedSequence([int(seed), _SEED_TAG, 2, cid]).generate_state(1)[0]))
    out = []
    for s in splits:
        noise = torch.randn(s.x.shape, generator=gen, dtype=torch.float64).to(s.x.dtype)
        out.append(Split(s.x + sigma * noise, s.y))
    return out


def _client_names(spec: DataSpec, src: Source, parts: list[np.ndarray]) -> tuple[list[str], list[str]]:
    """Display names and domains of the partition's clients, in partition order."""
    domains = []
    for p in parts:
        ds = np.unique(src.domain[p])
        domains.append(src.domains[int(ds[0])] if ds.size == 1 else src.name)
    if spec.partition in ("by-domain", "domain-dirichlet"):
        per = len(parts) // len(src.domains)
        names = [d if per == 1 else f"{d}/{i % per}" for i, d in enumerate(domains)]
        return names, domains
    return [f"client {i:02d}" for i in range(len(parts))], domains


def build_federated(spec: DataSpec, seed: int, download: bool = True) -> FederatedDataset:
    """Build the federated dataset that ``spec`` and ``seed`` determine (same inputs, identical tensors)."""
    check_spec(spec)
    src = load_source(spec.dataset, spec.image_size, spec.data_root, seed, download)
    children = np.random.SeedSequence([int(seed), _SEED_TAG]).spawn(4)
    rng_sub, rng_part, rng_unseen, rng_split = (np.random.default_rng(c) for c in children)
    rng_ratio = np.random.default_rng(np.random.SeedSequence([int(seed), _SEED_TAG, 1]))  # train_ratio's own stream
    total = spec.num_clients + spec.unseen_clients

    idx = np.arange(len(src.y))
    if spec.max_samples is not None and spec.max_samples < idx.size:
        test_flag = src.is_test.astype(np.int64) if src.is_test is not None else 0
        keys = (src.domain * 2 + test_flag) * src.num_classes + src.y
        idx = partition.stratified_subsample(keys, spec.max_samples, rng_sub)
    if 3 * total > idx.size:
        raise ValueError(
            f"num_clients + unseen_clients = {total} clients need at least {3 * total} samples "
            f"(3 splits each), only {idx.size} available; lower num_clients or raise max_samples"
        )

    official = spec.dataset in OFFICIAL_TEST and spec.partition == "by-domain"
    kwargs = dict(alpha=spec.alpha, classes_per_client=spec.classes_per_client, min_samples=spec.min_samples)
    if official:
        tr, te = idx[~src.is_test[idx]], idx[src.is_test[idx]]
        parts = [tr[p] for p in partition.by_domain(src.domain[tr], src.y[tr], total, rng_part)]
        test_parts = [te[p] for p in partition.by_domain(src.domain[te], src.y[te], total, rng_part)]
    else:
        parts = [
            idx[p] for p in partition.partition(spec.partition, src.y[idx], total, rng_part, domains=src.domain[idx], **kwargs)
        ]
        test_parts = [None] * total
    for i, p in enumerate(parts):
        if p.size < spec.min_samples:
            raise ValueError(
                f"client {i} of the {spec.partition!r} partition gets {p.size} samples < min_samples="
                f"{spec.min_samples}; lower min_samples or num_clients, or raise max_samples"
            )

    names, doms = _client_names(spec, src, parts)
    unseen_ids = set(rng_unseen.choice(total, size=spec.unseen_clients, replace=False).tolist() if spec.unseen_clients else [])
    f = spec.fractions
    seen, unseen = [], []
    assignment = np.full(len(src.y), -1, dtype=np.int64)
    order = [i for i in range(total) if i not in unseen_ids] + sorted(unseen_ids)
    for cid, i in enumerate(order):
        p = parts[i]
        if official:
            tr_pos, va_pos = partition.split_indices(src.y[p], (f[0] / (f[0] + f[1]), f[1] / (f[0] + f[1])), rng_split)
            split_idx = {"train": p[tr_pos], "val": p[va_pos], "test": test_parts[i]}
            if split_idx["test"].size == 0:
                raise ValueError(f"client {names[i]} has an empty official test split; lower num_clients")
        else:
            pos = partition.split_indices(src.y[p], f, rng_split)
            split_idx = dict(zip(("train", "val", "test"), (p[q] for q in pos)))
        if spec.train_ratio < 1:  # the train split thinned, class-stratified; validation and test as they were
            tr = split_idx["train"]
            keep = max(1, round(spec.train_ratio * tr.size))
            split_idx["train"] = tr[partition.stratified_subsample(src.y[tr], keep, rng_ratio)]
        name = names[i] if spec.partition in ("by-domain", "domain-dirichlet") else f"client {cid:02d}"
        splits = [_tensors(src, split_idx[s]) for s in ("train", "val", "test")]
        if spec.noise > 0 and i not in unseen_ids:
            splits = _noisy(splits, spec.noise * cid / max(spec.num_clients - 1, 1), seed, cid)
        client = ClientData(cid, name, doms[i], *splits)
        (unseen if i in unseen_ids else seen).append(client)
        for k, split in enumerate(SPLITS):
            if (assignment[split_idx[split]] != -1).any():  # pragma: no cover - partitioners are disjoint
                raise RuntimeError(f"client {name}: {split} samples already belong to another client or split")
            assignment[split_idx[split]] = 3 * cid + k

    info = {
        "dataset": spec.dataset,
        "source": src.path,
        "domains": list(src.domains),
        "n_per_domain": src.n_per_domain(),
        "n_used": int(idx.size),
        "image_normalisation": NORMALISATION,
        "official_test": official,
        "seed": int(seed),
        "spec": dataclasses.asdict(spec),
        # per pooled-source position: 3 * cid + split (0 train, 1 val, 2 test), -1 unused; see client_indices
        "assignment": assignment,
    }
    if official:
        info["note"] = (
            "by-domain on a benchmark with an official test split: test = official test shard; "
            "train/val cut from the official train split by fractions[0]:fractions[1]"
        )
    return FederatedDataset(
        name=spec.dataset,
        clients=seen,
        num_classes=src.num_classes,
        input_shape=tuple(int(v) for v in src.x.shape[1:]),
        unseen=unseen,
        info=info,
    )


def client_indices(fd: FederatedDataset, cid: int, split: str) -> np.ndarray:
    """Positions in the pooled source (``load_source``) of client ``cid``'s ``split``, from ``info["assignment"]``."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return np.flatnonzero(fd.info["assignment"] == 3 * cid + SPLITS.index(split))


def resolve_dataset(spec: DataSpec, fallback: bool = False, download: bool = True) -> DataSpec:
    """Check that ``spec``'s data can be loaded; with ``fallback``, swap missing fmnist for digits5-lite."""
    check_spec(spec)
    if spec.dataset in RENDERED:
        return spec
    try:
        load_source(spec.dataset, spec.image_size, spec.data_root, 0, download)
        return spec
    except DataUnavailable as e:
        if not (fallback and spec.dataset == "fmnist"):
            raise
        size = spec.image_size if spec.image_size in digits5_lite.IMAGE_SIZES else 16
        new = dataclasses.replace(spec, dataset="digits5-lite", image_size=size)
        try:
            check_spec(new)
        except ValueError as bad:
            raise DataUnavailable(f"{e}\n(fallback to digits5-lite impossible: {bad})") from None
        msg = (
            f"Fashion-MNIST is unavailable; falling back to digits5-lite (image_size={size}). "
            f"First line of the reason: {str(e).splitlines()[0]}"
        )
        warnings.warn(msg, stacklevel=2)
        print(f"NOTE: {msg}")
        return new


def domain_samples(
    images_per_domain: int = 8, image_size: int = 16, seed: int = 0, dataset: str = "digits5-lite"
) -> dict[str, np.ndarray]:
    """A few images per domain of a rendered dataset (``digits5-lite`` or ``digits-shift``), for plotting."""
    if images_per_domain < 1:
        raise ValueError(f"images_per_domain must be >= 1, got {images_per_domain}")
    loaders = {"digits5-lite": digits5_lite.load_digits5_lite, "digits-shift": digits_shift.load_digits_shift}
    if dataset not in loaders:
        raise ValueError(f"dataset must be one of {sorted(loaders)}, got {dataset!r}")
    return digits5_lite.pick_samples(loaders[dataset](image_size=image_size, seed=seed), images_per_domain)
