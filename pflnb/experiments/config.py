"""Experiment configs and the three profiles (smoke, cpu, paper)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any

from pflnb.data import DataSpec, check_spec
from pflnb.fl import RUNNERS, OptimConfig, RunSettings
from pflnb.fl.training import OPTIMIZERS

PROFILES = ("smoke", "cpu", "paper")
# Fields that do not change results and so stay out of the config hash (the runners give equal results: tested
# to 1e-10 in float64; in float32 they differ by rounding only, as devices do).
_UNHASHED = ("data_root", "device", "profile", "runner")


@dataclass(frozen=True)
class ExperimentConfig:
    """One run: method and hyperparameters, data, model, local optimization, rounds and seed."""

    method: str = "fedavg"
    method_params: dict[str, Any] = field(default_factory=dict)
    # data
    dataset: str = "digits5-lite"
    partition: str = "by-domain"
    num_clients: int = 5
    alpha: float = 0.5
    classes_per_client: int = 2
    fractions: tuple[float, float, float] = (0.6, 0.2, 0.2)
    max_samples: int | None = None
    image_size: int | None = 16
    min_samples: int = 10
    unseen_clients: int = 0
    # model and optimization
    model: str = "small-bn-cnn"
    rounds: int = 30
    participation: float = 1.0
    eval_every: int = 1
    lr: float = 0.05
    batch_size: int = 32
    local_epochs: int = 1
    momentum: float = 0.0
    weight_decay: float = 0.0
    optimizer: str = "sgd"
    lr_decay: float = 1.0
    finetune_epochs: int = 1
    seed: int = 0
    # bookkeeping (not hashed)
    profile: str = "cpu"
    data_root: str | None = None
    device: str = "auto"
    runner: str = field(default_factory=lambda: os.environ.get("PFLNB_RUNNER", "auto"))  # auto, sequential, batched

    def replace(self, **changes: Any) -> ExperimentConfig:
        """A copy with fields changed (unknown field names raise a clear error)."""
        names = {f.name for f in dataclasses.fields(self)}
        unknown = set(changes) - names
        if unknown:
            raise ValueError(f"unknown config field(s) {sorted(unknown)}; fields are {sorted(names)}")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """All fields as plain JSON-able values."""
        d = dataclasses.asdict(self)
        d["fractions"] = list(d["fractions"])
        return d

    def key(self) -> str:
        """Hash of every field that changes results (the results-cache key)."""
        d = {k: v for k, v in self.to_dict().items() if k not in _UNHASHED}
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]

    def data_spec(self) -> DataSpec:
        """The DataSpec of this run."""
        return DataSpec(
            dataset=self.dataset,
            partition=self.partition,
            num_clients=self.num_clients,
            alpha=self.alpha,
            classes_per_client=self.classes_per_client,
            fractions=tuple(self.fractions),
            max_samples=self.max_samples,
            image_size=self.image_size,
            min_samples=self.min_samples,
            unseen_clients=self.unseen_clients,
            data_root=self.data_root,
        )

    def optim(self) -> OptimConfig:
        """Local SGD settings."""
        return OptimConfig(
            lr=self.lr,
            batch_size=self.batch_size,
            local_epochs=self.local_epochs,
            momentum=self.momentum,
            weight_decay=self.weight_decay,
            optimizer=self.optimizer,
            lr_decay=self.lr_decay,
        )

    def settings(self, progress: bool = True, checkpoint_path: str | None = None, checkpoint_every: int = 0) -> RunSettings:
        """Engine settings of this run."""
        import pflnb

        return RunSettings(
            rounds=self.rounds,
            participation=self.participation,
            eval_every=self.eval_every,
            seed=self.seed,
            optim=self.optim(),
            finetune_epochs=self.finetune_epochs,
            checkpoint_every=checkpoint_every,
            checkpoint_path=checkpoint_path,
            progress=progress,
            device=str(pflnb.device(self.device)),
            runner=self.runner,
        )

    def validate(self) -> None:
        """Raise ValueError naming the bad field, before any data is loaded or training starts."""
        from pflnb.algorithms import make_algorithm
        from pflnb.models import MODELS

        if self.profile not in PROFILES:
            raise ValueError(f"unknown profile {self.profile!r}; choose one of {PROFILES}")
        make_algorithm(self.method, self.method_params)
        if self.model not in MODELS:
            raise ValueError(f"unknown model {self.model!r}; choose one of {sorted(MODELS)}")
        check_spec(self.data_spec())
        for name in ("rounds", "eval_every", "batch_size", "local_epochs"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.finetune_epochs < 0:
            raise ValueError(f"finetune_epochs must be >= 0, got {self.finetune_epochs}")
        if not 0.0 < self.participation <= 1.0:
            raise ValueError(f"participation must be in (0, 1], got {self.participation}")
        if self.lr <= 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if not 0.0 < self.lr_decay <= 1.0:
            raise ValueError(f"lr_decay must be in (0, 1], got {self.lr_decay}")
        if self.runner not in RUNNERS:
            raise ValueError(f"runner must be one of {RUNNERS}, got {self.runner!r}")


# Per profile and dataset: the settings that differ from the dataclass defaults.
_PROFILE_TABLE: dict[str, dict[str, dict[str, Any]]] = {
    "smoke": {
        "digits5-lite": dict(image_size=8, rounds=2, model="small-bn-cnn", batch_size=32, lr=0.05),
        "fmnist": dict(
            partition="dirichlet", alpha=0.3, num_clients=10, max_samples=1000, image_size=None, rounds=2, model="cnn", lr=0.05
        ),
    },
    "cpu": {
        "digits5-lite": dict(image_size=16, rounds=30, model="small-bn-cnn", batch_size=32, lr=0.05),
        "fmnist": dict(
            partition="dirichlet", alpha=0.3, num_clients=20, max_samples=6000, image_size=None, rounds=30, model="cnn", lr=0.05
        ),
    },
    "paper": {
        "digits5-lite": dict(image_size=28, rounds=100, model="digit", batch_size=32, lr=0.01),
        "digits5": dict(partition="by-domain", image_size=28, rounds=100, model="digit", batch_size=32, lr=0.01),
        "fmnist": dict(
            partition="dirichlet", alpha=0.1, num_clients=100, image_size=None, rounds=500, model="cnn", participation=0.1
        ),
        "office-caltech10": dict(
            partition="by-domain", num_clients=4, image_size=256, rounds=300, model="alexnet-bn", batch_size=32, lr=0.01
        ),
        "domainnet10": dict(
            partition="by-domain", num_clients=6, image_size=256, rounds=300, model="alexnet-bn", batch_size=32, lr=0.01
        ),
    },
}
SEEDS = {"smoke": [0], "cpu": [0, 1, 2], "paper": [0, 1, 2]}


def profile_config(profile: str = "cpu", dataset: str = "digits5-lite", **overrides: Any) -> ExperimentConfig:
    """The profile's config for ``dataset`` with ``overrides`` applied."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {PROFILES}")
    table = _PROFILE_TABLE[profile]
    if dataset not in table:
        raise ValueError(f"profile {profile!r} has no settings for dataset {dataset!r}; it has {sorted(table)}")
    return ExperimentConfig(profile=profile, dataset=dataset, **table[dataset]).replace(**overrides)


def with_available_data(cfg: ExperimentConfig, fallback: bool = True) -> ExperimentConfig:
    """``cfg`` if its dataset can be loaded; else (Fashion-MNIST only, with ``fallback``) the same config on
    digits5-lite, with a printed note. Call it before running so the results cache keys the data used."""
    from pflnb.data import resolve_dataset

    spec = resolve_dataset(cfg.data_spec(), fallback=fallback)
    if spec.dataset == cfg.dataset:
        return cfg
    return cfg.replace(dataset=spec.dataset, image_size=spec.image_size)


def profile_seeds(profile: str) -> list[int]:
    """Seeds a profile runs (smoke: one; cpu and paper: three)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {PROFILES}")
    return list(SEEDS[profile])
