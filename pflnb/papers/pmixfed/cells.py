"""pMixFed's settings are (dataset, federation) *cells*: the paper's Tables 1–2 cross datasets with two federations
(N = 10 clients all taking part, N = 100 with C = 0.1). This module declares them once: every run's recipe
(:data:`RECIPE`), the federations (:data:`FEDERATIONS`), each profile's cells and their config fields (:data:`CELLS`;
the paper profile's datasets, CIFAR-10/100 and MNIST, differ from the reduced profiles' Fashion-MNIST and
digits5-lite), and the cells each table runs (:data:`TABLE1_CELLS`, :data:`TABLE2_MLP15_CELLS`). An experiment runs
cells as the shared shape's settings (:func:`cell_settings`: a :class:`~pflnb.experiments.paper.Setting` per cell, on
its dataset, with the arms run there). :mod:`pflnb.papers.pmixfed.paper` declares the experiments over these cells,
:mod:`pflnb.papers.pmixfed.ledger` the claims that read them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pflnb.experiments.config import PROFILES
from pflnb.experiments.paper import Setting

# Every run (batch 32 is the profile table's): train / val / test fractions per client with a large test split
# for less noisy unseen accuracies.
RECIPE = dict(
    optimizer="adam", lr=1e-3, local_epochs=2, finetune_epochs=2, partition="dirichlet", alpha=0.1, fractions=(0.5, 0.1, 0.4)
)
RECIPES = dict.fromkeys(PROFILES, RECIPE)  # an experiment's ``fields``: the recipe at every profile
FEDERATIONS = {"N10": dict(num_clients=10, participation=1.0), "N100": dict(num_clients=100, participation=0.1)}
# profile → (dataset, federation) → the cell's config fields, over the profile table, RECIPE and FEDERATIONS.
_PAPER_CELL = dict(image_size=None, rounds=100, unseen_clients=20, min_samples=20)
CELLS: dict[str, dict[tuple[str, str], dict[str, Any]]] = {
    "smoke": {
        ("fmnist", "N10"): dict(max_samples=600, image_size=14, model="pmixfed-cnn", rounds=2, unseen_clients=4, min_samples=6),
        ("fmnist", "N100"): dict(
            max_samples=1500, image_size=14, model="pmixfed-cnn", rounds=2, unseen_clients=4, alpha=0.5, min_samples=6
        ),
        ("digits5-lite", "N10"): dict(
            image_size=8, model="pmixfed-cnn", rounds=2, unseen_clients=4, min_samples=6, max_samples=600
        ),
    },
    "cpu": {
        ("fmnist", "N10"): dict(max_samples=3000, image_size=14, model="pmixfed-cnn", rounds=10, unseen_clients=10),
        ("fmnist", "N100"): dict(
            max_samples=6600, image_size=14, model="pmixfed-cnn", rounds=10, unseen_clients=10, alpha=0.3, eval_every=2
        ),
        ("digits5-lite", "N10"): dict(image_size=8, model="pmixfed-cnn", rounds=10, unseen_clients=10),
        ("digits5-lite", "N100"): dict(
            image_size=8,
            model="pmixfed-cnn",
            rounds=10,
            unseen_clients=10,
            partition="pathological",
            classes_per_client=2,
            min_samples=9,
            eval_every=2,
        ),
    },
    "paper": {
        (ds, st): dict(_PAPER_CELL, model=model, **({"eval_every": 5} if st == "N100" else {}))
        for ds, model in (("cifar10", "pmixfed-cifar-cnn"), ("cifar100", "pmixfed-cifar-cnn"), ("mnist", "cnn"))
        for st in ("N10", "N100")
    },
}
# The experiments beside Table 1 run on one cell of each profile: the first dataset (or digits5-lite), N = 10.
FIRST = {"smoke": (("fmnist", "N10"),), "cpu": (("fmnist", "N10"),), "paper": (("cifar10", "N10"),)}
DIGITS = {"smoke": (("digits5-lite", "N10"),), "cpu": (("digits5-lite", "N10"),), "paper": (("cifar10", "N10"),)}


def cell_settings(
    at: Mapping[str, tuple[tuple[str, str], ...]],
    arms: Mapping[Any, tuple[str, ...]] | None = None,
    fields: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, tuple[Setting, ...]]:
    """An experiment's ``settings`` over cells: ``at`` maps a profile to its (dataset, federation) cells, in order.
    Each cell is a :class:`~pflnb.experiments.paper.Setting` on its dataset (its runs labelled ``dataset`` and
    ``setting``, the federation) with the federation's :data:`FEDERATIONS` fields, the cell's :data:`CELLS` fields and
    ``fields[profile]`` over them (the experiment's own: a model, a size); it runs the arms ``arms`` names for the cell
    (a (profile, dataset, federation) key, looked up first) or for the profile (default: every arm). Every run's
    config: the profile table, :data:`RECIPE` (the experiment's ``fields``, :data:`RECIPES`), then the cell's."""
    out = {}
    for profile, where in at.items():
        unknown = [c for c in where if c not in CELLS.get(profile, {})]
        if unknown:
            raise ValueError(f"no cells {unknown} at profile {profile!r}; see CELLS")
        out[profile] = tuple(
            Setting(
                federation,
                {**FEDERATIONS[federation], **CELLS[profile][(ds, federation)], **(fields or {}).get(profile, {})},
                (arms or {}).get((profile, ds, federation), (arms or {}).get(profile)),
                dataset=ds,
            )
            for ds, federation in where
        )
    return out


def cell_rounds(cells: Mapping[str, tuple[tuple[str, str], ...]], profile: str) -> int:
    """The rounds of the first of ``cells`` at ``profile`` (e.g. :data:`FIRST`'s)."""
    return int(CELLS[profile][cells[profile][0]]["rounds"])


# Table 1 runs every cell of its profile.
TABLE1_CELLS = {profile: tuple(cells) for profile, cells in CELLS.items()}
# Table 2 analogue: the Table 1 recipe with a 15-block network (an equal-width MLP, pmixfed-mlp15, in place of the
# paper's MobileNetV1 on CIFAR); the partial baselines split its 15 blocks in the middle, as for Table 1 (paper.py): 7 shared / 8
# personal (LG-FedAvg: the bottom 7 personal). Compute is bounded: one run takes about 3-8 s on one core, so all four
# cpu cells × nine methods × 5 seeds with tuning (about 280 runs) would take over 20 minutes; the analogue runs the
# Fashion-MNIST cells (N = 10 and N = 100, as Table 2's two federations) with pMixFed, FedAvg and the Table 1
# baselines strongest on those cells after fine-tuning (FedAlt, FedBABU): no pMixFed-Dynamic, FedSim, LG-FedAvg,
# Per-FedAvg or pFedHN, no digits5-lite.
TABLE2_MLP15_CELLS = {"smoke": FIRST["smoke"], "cpu": (("fmnist", "N10"), ("fmnist", "N100"))}
TABLE2_MLP15_ARMS = ("pmixfed", "fedavg", "fedalt", "fedbabu")
