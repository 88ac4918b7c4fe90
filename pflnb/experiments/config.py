"""Experiment configs and the three profiles (smoke, cpu, paper)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pflnb
from pflnb.algorithms import get_algorithm_class
from pflnb.data import DataSpec, check_spec, resolve_dataset
from pflnb.fields import check_fields, choice, flag, including, integer, is_int, is_real, part_of
from pflnb.fl import RUNNERS, OptimConfig, RunSettings, Schedule
from pflnb.models import MODELS

PROFILES = ("smoke", "cpu", "paper")
# Fields that do not change results and so stay out of the config hash.
_UNHASHED = ("data_root", "device", "profile", "runner")  # the runners give equal results (tested)
# Fields hashed only away from their default, so that adding them kept every existing cache key: ``deterministic``
# changes no CPU result, and on CUDA a record made without the determinism controls must not stand in for one made
# with them (nor the other way round).
_HASHED_IF_NOT_DEFAULT = {"deterministic": True, "train_ratio": 1.0, "noise": 0.0}


@dataclass(frozen=True)
@including(DataSpec, Schedule, OptimConfig)
class ExperimentConfig:
    """One run. Its settings are declared once, in the part that uses them, with their allowed values
    (:mod:`pflnb.fields`): the data (:class:`~pflnb.data.DataSpec`: dataset, partition, clients, splits, ...), the
    round schedule (:class:`~pflnb.fl.engine.Schedule`: rounds, participation, eval_every, seed, finetune_epochs) and
    the local optimizer (:class:`~pflnb.fl.training.OptimConfig`: lr, batch_size, local_epochs, ...); this class adds
    the method, the model and how the run executes. :meth:`data_spec`, :meth:`optim` and :meth:`settings` hand each
    layer its part."""

    method: str = "fedavg"
    method_params: dict[str, Any] = field(default_factory=dict)
    model: str = "small-bn-cnn"
    # execution: torch intra-op and BLAS/OpenMP threads while the run executes; hashed, since results on the CPU
    # depend on the thread count (reductions split differently)
    threads: int = integer(1, 1)
    # CUDA determinism controls for the run (pflnb.determinism): identical records from identical configs on one GPU
    deterministic: bool = flag(True)
    # bookkeeping (not hashed; data_root, DataSpec's, neither)
    profile: str = choice("cpu", PROFILES)
    device: str = "auto"
    runner: str = choice(
        None, RUNNERS, "auto, sequential, batched, stacked", factory=lambda: os.environ.get("PFLNB_RUNNER", "auto")
    )

    def replace(self, **changes: Any) -> ExperimentConfig:
        """A copy with fields changed (unknown field names raise a clear error)."""
        names = {f.name for f in dataclasses.fields(self)}
        unknown = set(changes) - names
        if unknown:
            raise ValueError(f"unknown config field(s) {sorted(unknown)}; fields are {sorted(names)}")
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> ExperimentConfig:
        """The config a record's ``config`` (:meth:`to_dict`) describes."""
        return cls(**{**values, "fractions": tuple(values["fractions"])})

    def to_dict(self) -> dict[str, Any]:
        """All fields as plain JSON-able values."""
        d = dataclasses.asdict(self)
        d["fractions"] = list(d["fractions"])
        return d

    def key(self) -> str:
        """Hash of every field that changes results (the results-cache key)."""
        d = {
            k: v
            for k, v in self.to_dict().items()
            if k not in _UNHASHED and not (k in _HASHED_IF_NOT_DEFAULT and v == _HASHED_IF_NOT_DEFAULT[k])
        }
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]

    def data_spec(self) -> DataSpec:
        """The DataSpec of this run (its data fields)."""
        return part_of(self, DataSpec, fractions=tuple(self.fractions))

    def optim(self) -> OptimConfig:
        """The local optimizer's settings (its OptimConfig fields)."""
        return part_of(self, OptimConfig)

    def settings(self, progress: bool = True, checkpoint_path: str | None = None, checkpoint_every: int = 0) -> RunSettings:
        """Engine settings of this run."""
        return RunSettings(
            **{f.name: getattr(self, f.name) for f in dataclasses.fields(Schedule)},
            optim=self.optim(),
            checkpoint_every=checkpoint_every,
            checkpoint_path=checkpoint_path,
            progress=progress,
            device=str(pflnb.device(self.device)),
            runner=self.runner,
        )

    def validate(self) -> None:
        """Raise ValueError naming the bad field, before any data is loaded or training starts.

        Every field is type- and range-checked (integers are Python ints, floats finite), the method's
        hyperparameters against the types of its Params (floats finite), names against their registries, the
        device against what this machine has and ``data_root`` against the file system.
        """
        for name in ("method", "model", "device"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise ValueError(f"{name} must be a string, got {value!r} ({type(value).__name__})")
        check_fields(self)  # every field's declared values, its parts' included
        _check_method(self.method, self.method_params)
        if self.model not in MODELS:
            raise ValueError(f"unknown model {self.model!r}; choose one of {sorted(MODELS)}")
        _check_device(self.device)
        if self.data_root is not None:
            if not isinstance(self.data_root, str) or not self.data_root:
                raise ValueError(f"data_root must be None or a folder path (string), got {self.data_root!r}")
            if not Path(self.data_root).expanduser().is_dir():
                raise ValueError(f"data_root {self.data_root!r} is not an existing folder")
        check_spec(self.data_spec())


def _check_json_value(where: str, value: object) -> None:
    """Hyperparameter values: JSON-able (None, bool, int, str, finite float, lists and dicts of them)."""
    if value is None or isinstance(value, bool | int | str):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where} must be finite, got {value!r}")
        return
    if isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _check_json_value(f"{where}[{i}]", v)
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError(f"{where} keys must be strings, got {k!r}")
            _check_json_value(f"{where}[{k!r}]", v)
        return
    raise ValueError(f"{where} must be a number, string, boolean, None or a list of them, got {value!r} ({type(value).__name__})")


def _check_param_type(where: str, value: object, annotation: object) -> None:
    """``value`` against a Params field annotation (float, int, bool, str, X | None, tuple[int, ...])."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    kinds = {t.strip() for t in text.split("|")}
    if value is None:
        if "None" not in kinds:
            raise ValueError(f"{where} must not be None (expected {text})")
        return
    checks = {
        "float": is_real,
        "int": is_int,
        "bool": lambda v: isinstance(v, bool),
        "str": lambda v: isinstance(v, str),
        "tuple[int, ...]": lambda v: isinstance(v, list | tuple) and all(is_int(x) for x in v),
    }
    known = [checks[k] for k in kinds if k in checks]
    if known and not any(check(value) for check in known):
        raise ValueError(f"{where} must be {text}, got {value!r} ({type(value).__name__})")


def _check_method(method: str, params: object) -> None:
    cls = get_algorithm_class(method)
    if not isinstance(params, dict):
        raise ValueError(f"method_params must be a dict of hyperparameters, got {params!r}")
    fields = {f.name: f.type for f in dataclasses.fields(cls.Params)}
    unknown = sorted(set(params) - set(fields), key=str)
    if unknown:
        raise ValueError(f"unknown parameter(s) {unknown} for method {method!r}; allowed: {sorted(fields)}")
    for name, value in params.items():
        where = f"method_params[{name!r}] of {method!r}"
        _check_json_value(where, value)
        _check_param_type(where, value, fields[name])
    try:
        cls.from_dict(params)
    except (TypeError, AttributeError) as e:  # a Params.validate that trips over a value type
        raise ValueError(f"method_params of {method!r} rejected: {e}") from e


def _check_device(name: str) -> None:
    import torch

    if name == "auto":
        return
    try:
        dev = torch.device(name)
    except (RuntimeError, TypeError):
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps', got {name!r}") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device {name!r}: CUDA is not available on this machine (use 'auto' or 'cpu')")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"device {name!r}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    elif dev.type == "mps":
        if not torch.backends.mps.is_available():
            raise ValueError(f"device {name!r}: MPS is not available on this machine (use 'auto' or 'cpu')")
    elif dev.type != "cpu":
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps', got {name!r}")


# Per profile and dataset: the settings that differ from the dataclass defaults.
_PROFILE_TABLE: dict[str, dict[str, dict[str, Any]]] = {
    "smoke": {
        "digits5-lite": dict(image_size=8, rounds=2, model="small-bn-cnn", batch_size=32, lr=0.05),
        "digits-shift": dict(num_clients=8, image_size=8, rounds=2, model="small-bn-cnn", batch_size=32, lr=0.05),
        "fmnist": dict(
            partition="dirichlet", alpha=0.3, num_clients=10, max_samples=1000, image_size=None, rounds=2, model="cnn", lr=0.05
        ),
    },
    "cpu": {
        "digits5-lite": dict(image_size=16, rounds=30, model="small-bn-cnn", batch_size=32, lr=0.05),
        "digits-shift": dict(num_clients=8, image_size=16, rounds=30, model="small-bn-cnn", batch_size=32, lr=0.05),
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


def has_row(profile: str, dataset: str) -> bool:
    """Whether the profile table has settings for ``dataset`` at ``profile``."""
    return dataset in _PROFILE_TABLE.get(profile, {})


def with_available_data(cfg: ExperimentConfig, fallback: bool = True) -> ExperimentConfig:
    """``cfg`` if its dataset can be loaded; else (Fashion-MNIST only, with ``fallback``) the same config on
    digits5-lite, with a printed note. Call it before running so the results cache keys the data used."""
    spec = resolve_dataset(cfg.data_spec(), fallback=fallback)
    if spec.dataset == cfg.dataset:
        return cfg
    return cfg.replace(dataset=spec.dataset, image_size=spec.image_size)


def profile_seeds(profile: str) -> list[int]:
    """Seeds a profile runs (smoke: one; cpu and paper: three)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {PROFILES}")
    return list(SEEDS[profile])
