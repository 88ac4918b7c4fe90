"""What federated dataset to build: source, partition, splits, held-out clients."""

from __future__ import annotations

from dataclasses import dataclass

from pflnb.fields import choice, integer, real

DATASETS = (
    "digits5-lite",
    "digits-shift",
    "fmnist",
    "mnist",
    "svhn",
    "usps",
    "cifar10",
    "cifar100",
    "digits5",
    "office-caltech10",
    "domainnet10",
)
# Classes of each dataset: what chance accuracy (1 / classes) and the floor for arms that did not train are read from
NUM_CLASSES = {d: 10 for d in DATASETS} | {"cifar100": 100}
PARTITIONS = ("iid", "dirichlet", "pathological", "by-domain", "domain-dirichlet")


@dataclass(frozen=True)
class DataSpec:
    """Everything that determines a federated dataset, together with a seed.

    - ``dataset``: one of ``DATASETS``.
    - ``partition``: ``iid``, ``dirichlet`` (``alpha``), ``pathological`` (``classes_per_client``),
      ``by-domain`` (each domain split into ``num_clients / n_domains`` shards) or
      ``domain-dirichlet`` (Dirichlet(``alpha``) over classes inside each domain).
    - ``num_clients``: clients taking part in federation; ``unseen_clients`` more are held out.
    - ``fractions``: per-client train/val/test fractions (sum to 1).
    - ``max_samples``: cap on the pooled samples used (None: all), drawn class-stratified.
    - ``image_size``: side of the square images (digits5-lite: 8, 16, 28 or 32; digits-shift: 8, 16, 20,
      28 or 32; None: native, 16 for digits-shift).
    - ``min_samples``: every client gets at least this many samples (Dirichlet redraws, bounded).
    - ``train_ratio``: the share γ of each client's training split kept (class-stratified), its validation and test
      splits unchanged (Fed-CO2's Fig. 6); 1: all of it.
    - ``noise``: σ_M of noise heterogeneity (Fed-CO2's App. F.3): seen client i of N gets additive Gaussian noise of
      standard deviation σ_M·i/(N − 1) on the [0, 1] images (not clipped; the paper's σ_M ∈ {0, 5, …, 20} are on the
      0–255 scale, i.e. σ_M/255 here) on all three splits, drawn once per sample from the seed; 0: none.
    - ``data_root``: folder with real data (None: ``$PFLNB_DATA`` or the defaults in ``pflnb.data``).
    """

    dataset: str = choice("digits5-lite", DATASETS)
    partition: str = choice("by-domain", PARTITIONS)
    num_clients: int = integer(5, 1)
    alpha: float = real(0.5, 0.0, low_open=True)
    classes_per_client: int = integer(2, 1)
    fractions: tuple[float, float, float] = (0.6, 0.2, 0.2)  # checked by partition.check_fractions
    max_samples: int | None = integer(None, 1, optional=True)
    image_size: int | None = integer(16, 1, optional=True)
    min_samples: int = integer(10, 0)
    unseen_clients: int = integer(0, 0)
    data_root: str | None = None
    train_ratio: float = real(1.0, 0.0, 1.0, low_open=True)
    noise: float = real(0.0, 0.0)
