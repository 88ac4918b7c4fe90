"""pMixFed's settings are (dataset, federation) *cells*: the paper's Tables 1–2 cross datasets with two federations (N = 10
clients all taking part, N = 100 with C = 0.1). This module declares them once: every run's recipe (:data:`RECIPE`),
the federations (:data:`FEDERATIONS`), each profile's cells and their config fields (:data:`CELLS`), the cells each
table runs (:data:`TABLE1_CELLS`, :data:`TABLE2_MLP15_CELLS`), and :class:`Cells`, the experiment over them. The paper
profile's datasets (CIFAR-10/100, MNIST) differ from the reduced profiles' (Fashion-MNIST, digits5-lite), and Table 1
runs several cells and a different set of methods per profile; :class:`Cells` is the paper-local
:class:`~pflnb.experiments.paper.Experiment` for that, and its docstring says which change to
:mod:`pflnb.experiments.paper` would remove it. :mod:`pflnb.papers.pmixfed.paper` declares the experiments over these
cells, :mod:`pflnb.papers.pmixfed.ledger` the claims that read them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pflnb.experiments.config import ExperimentConfig, profile_config
from pflnb.experiments.paper import Choice, Experiment, arm_config

# Every run (batch 32 is the profile table's): train / val / test fractions per client with a large test split
# for less noisy unseen accuracies.
RECIPE = dict(
    optimizer="adam", lr=1e-3, local_epochs=2, finetune_epochs=2, partition="dirichlet", alpha=0.1, fractions=(0.5, 0.1, 0.4)
)
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


@dataclass(frozen=True)
class Cells(Experiment):
    """An :class:`~pflnb.experiments.paper.Experiment` over cells of :data:`CELLS` (paper-local).

    ``cells`` maps a profile to the (dataset, federation) cells one call runs, in order; the result's table has
    ``dataset`` and ``setting`` (the federation) columns. A run's config is the profile table (the dataclass
    defaults for a dataset it has no row for: the paper profile's CIFAR-10/100 and MNIST), then :data:`RECIPE`, the
    federation's :data:`FEDERATIONS` fields, the cell's :data:`CELLS` fields, ``fields[profile]`` and the arm's own
    (``at`` may also key a (profile, dataset) pair, merged over the profile's). ``arms_at`` maps a profile, or a
    (profile, dataset, federation) cell (looked up first), to the labels of the arms run there (default: every arm).
    The declared ``dataset`` names the first cell's, for reading; the cells decide.

    What the shape would need instead: an experiment's dataset per profile, grid points that set several fields at
    once (a cell), arms per cell (the shared ``Experiment.only`` maps an arm to its profiles), ``Arm.at`` keyed by
    (profile, dataset) as ``fields`` is,
    and profile-table rows for the paper profile's CIFAR-10/100 and MNIST.
    """

    cells: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    arms_at: Mapping[Any, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        for profile, cells in self.cells.items():
            unknown = [c for c in cells if c not in CELLS.get(profile, {})]
            if unknown:
                raise ValueError(f"experiment {self.name!r}: no cells {unknown} at profile {profile!r}; see CELLS")
        for labels in self.arms_at.values():
            for label in labels:
                self.arm(label)

    def cells_at(self, profile: str, dataset: str | None = None) -> list[tuple[str, str]]:
        """The (dataset, federation) cells run at ``profile`` (on ``dataset`` only, when given)."""
        cells = [c for c in self.cells.get(profile, ()) if dataset in (None, c[0])]
        if not cells:
            on = f" on {dataset!r}" if dataset else ""
            raise ValueError(f"experiment {self.name!r} runs no cell at profile {profile!r}{on}; it has {dict(self.cells)}")
        return cells

    def cell(self, profile: str, dataset: str, setting: str, **overrides: Any) -> ExperimentConfig:
        """The config of cell (``dataset``, ``setting``) at ``profile`` before the arm's fields."""
        try:
            start = profile_config(profile, dataset)
        except ValueError:  # the profile table has no row for this dataset
            start = ExperimentConfig(profile=profile, dataset=dataset)
        fields = {**RECIPE, **FEDERATIONS[setting], **CELLS[profile][(dataset, setting)], **self.fields.get(profile, {})}
        return start.replace(**{**fields, **overrides})

    def base(self, profile: str, dataset: str | None = None, **overrides: Any) -> ExperimentConfig:
        """The config of the first cell at ``profile`` (on ``dataset``)."""
        return self.cell(profile, *self.cells_at(profile, dataset)[0], **overrides)

    def runs(
        self,
        profile: str,
        seeds: Sequence[int] | None = None,
        dataset: str | None = None,
        choice: Choice | None = None,
        **overrides: Any,
    ) -> list[tuple[dict[str, Any], ExperimentConfig]]:
        """Every run, as (labels, config): cell by cell, arm by arm, seed by seed; labels hold ``label``, ``dataset``,
        ``setting`` and ``seed``; ``choice`` as in :meth:`Experiment.runs`."""
        seeds = self.seeds_at(profile) if seeds is None else list(seeds)
        out = []
        for ds, st in self.cells_at(profile, dataset):
            base = self.cell(profile, ds, st, **overrides)
            here = self.arms_at.get((profile, ds, st), self.arms_at.get(profile))
            for arm in self.arms:
                if here is not None and arm.label not in here:
                    continue
                params = {**arm.params_at(profile), **arm.at.get((profile, ds), {})}  # type: ignore[call-overload]
                cell = {"label": arm.label, "dataset": ds, "setting": st}
                for seed in seeds:
                    cfg = arm_config(base, arm, params, seed, choice, cell)
                    if cfg is not None:
                        out.append(({**cell, "seed": seed}, cfg))
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
