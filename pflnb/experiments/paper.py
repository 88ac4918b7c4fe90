"""One shape for a paper: experiments and claims declared as data, one function to run an experiment, one to decide
the claims.

A paper declares

- its **experiments** (:class:`Experiment`): a name, the dataset, the experiment's config fields per profile (the
  second and last config layer, over the profile table of :func:`~pflnb.experiments.config.profile_config`), the
  compared **arms** (:class:`Arm`: label → registered method, its parameters and config fields of its own), the
  seeds per profile, optionally a grid (a config field swept for every arm) and an evaluation protocol;
- its **claims** (:class:`Compare`, :class:`Best`, :class:`Derived`): the claim's text, the paper's value, which
  experiment and arms it reads and which rule decides it (:mod:`pflnb.experiments.claims`).

:func:`run_experiment` runs a named experiment of a paper at a profile on any executor and returns an
:class:`ExperimentResult` (a tidy table, one row per run, and the records); :func:`decide` turns the results into
:class:`~pflnb.experiments.claims.Claim` rows, one signature for every paper. What stays paper-specific is what is
really the paper's: its theory, its figures and its own views of the records (a :class:`Derived` claim names one).

The path of one experiment through the code: notebook → :func:`run_experiment` (this module) → the declaration
(:class:`Experiment` in ``pflnb/papers/<paper>/paper.py``) → :func:`~pflnb.experiments.run.run_many` →
:func:`~pflnb.experiments.executors.execute` → the engine (:func:`~pflnb.fl.run_simulation`) → the algorithm's
hooks; then :func:`decide` → the rule in :mod:`pflnb.experiments.claims`.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pflnb.algorithms.registry import get_algorithm_class
from pflnb.data.spec import NUM_CLASSES
from pflnb.experiments import claims as R
from pflnb.experiments.claims import Claim, Outcome
from pflnb.experiments.config import PROFILES, ExperimentConfig, has_row, profile_config, with_available_data
from pflnb.experiments.executors import Executor, execute
from pflnb.experiments.jobs import EvalProtocol, Job, RunJob
from pflnb.experiments.run import warn_diverged
from pflnb.experiments.tables import summary_table


@dataclass(frozen=True)
class Arm:
    """One compared configuration: its ``label``, a registered ``method``, the method's ``params`` (``at``: params of
    one profile only, merged over them) and config fields of this arm only (``fields``: a learning rate, ...)."""

    label: str
    method: str
    params: Mapping[str, Any] = field(default_factory=dict)
    fields: Mapping[str, Any] = field(default_factory=dict)
    at: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def params_at(self, profile: str) -> dict[str, Any]:
        """The method's parameters at ``profile``."""
        return {**self.params, **self.at.get(profile, {})}


@dataclass(frozen=True)
class Setting:
    """A named data setting of an experiment: config fields over the experiment's (a setting may change the
    dataset, e.g. to one the profile table has no row for), and the labels of the arms it runs (None: every arm)."""

    name: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    arms: tuple[str, ...] | None = None


_CELL_COLUMNS = ("setting", "dataset")  # a run's labels beside its arm that tuning keeps apart
Choice = Callable[[Mapping[str, Any]], "tuple[dict[str, Any], dict[str, Any]] | None"]


def arm_config(
    base: ExperimentConfig,
    arm: Arm,
    params: Mapping[str, Any],
    seed: int,
    choice: Choice | None = None,
    cell: Mapping[str, Any] | None = None,
) -> ExperimentConfig | None:
    """One run's config: ``base`` with the arm's method, the method's ``params`` and the arm's fields, then what
    ``choice`` chose for the run's ``cell`` (its labels but the seed); None where the choice has no candidate. A
    method that makes its own steps (:attr:`~pflnb.fl.algorithm.Algorithm.steps_with`) runs with that optimizer, so
    that the config says what runs (:func:`runs_with`)."""
    fields, params = dict(arm.fields), dict(params)
    if choice is not None:
        chosen = choice(cell or {})
        if chosen is None:
            return None
        fields, params = {**fields, **chosen[0]}, {**params, **chosen[1]}
    return runs_with(base.replace(method=arm.method, method_params=params, seed=seed, **fields))


def runs_with(cfg: ExperimentConfig) -> ExperimentConfig:
    """``cfg`` with the optimizer its method's steps really are: for a method whose :attr:`steps_with
    <pflnb.fl.algorithm.Algorithm.steps_with>` is ``"sgd"`` (plain gradient steps), plain SGD without momentum or
    weight decay in place of the experiment's optimizer (Adam, say), which that method would not use."""
    own = get_algorithm_class(cfg.method).steps_with
    if own is None or (cfg.optimizer == own and not cfg.momentum and not cfg.weight_decay):
        return cfg
    return cfg.replace(optimizer=own, momentum=0.0, weight_decay=0.0)


@dataclass(frozen=True)
class Tune:
    """An equal tuning budget for every arm of an experiment: each arm gets the same ``grid`` (config field → values
    per profile, e.g. the learning rate) and, where the paper names one, its method's key hyperparameter (``keys``:
    arm label → {method parameter: values per profile}; ``methods``: the same by registered method, for every arm of
    that method, e.g. FedProx's μ wherever FedProx runs; an arm's own ``keys`` entry wins). An arm's values are chosen
    on the mean best *validation* accuracy over the tuning ``seeds`` (per profile, never among the experiment's
    verdict seeds), the first candidate on ties; test accuracy is never read. With settings or a grid, each (setting or
    grid point, arm) is tuned on its own. ``shared``: arm label → the arm whose choice it takes instead of its own
    (runs paired with another arm's that differ from them by an intervention alone, e.g. a forced collapse: tuned on
    the intervention, the pair would differ in its learning rate too). ``paper``: arm label (or ``"*"``: every arm) →
    the values the paper states for its setting, shown beside ours in the claims' notes. ``optimizers``: optimizer →
    the ``grid`` of an arm that runs another optimizer than the experiment's (a method that makes plain gradient steps
    in an experiment on Adam: :func:`runs_with`), so that each arm is tuned on a grid for the optimizer it runs.
    Tuning runs are plain engine runs (:class:`~pflnb.experiments.jobs.RunJob` under the experiment's protocol),
    whatever the experiment's job computes besides. A profile without tuning seeds runs the arms as declared."""

    grid: Mapping[str, Mapping[str, Sequence[Any]]] = field(default_factory=dict)
    seeds: Mapping[str, Sequence[int]] = field(default_factory=dict)
    keys: Mapping[str, Mapping[str, Mapping[str, Sequence[Any]]]] = field(default_factory=dict)
    paper: Mapping[str, str] = field(default_factory=dict)
    methods: Mapping[str, Mapping[str, Mapping[str, Sequence[Any]]]] = field(default_factory=dict)
    shared: Mapping[str, str] = field(default_factory=dict)
    optimizers: Mapping[str, Mapping[str, Mapping[str, Sequence[Any]]]] = field(default_factory=dict)

    def grid_for(self, optimizer: str | None = None) -> Mapping[str, Mapping[str, Sequence[Any]]]:
        """The grid of an arm that runs ``optimizer`` in place of the experiment's (None: the experiment's own)."""
        if optimizer is None:
            return self.grid
        if optimizer not in self.optimizers:
            raise ValueError(
                f"an arm runs {optimizer!r} in place of the experiment's optimizer, but Tune declares no "
                f"grid for it (optimizers has {sorted(self.optimizers)})"
            )
        return self.optimizers[optimizer]

    def key_grid(self, label: str, method: str | None = None) -> dict[str, Mapping[str, Sequence[Any]]]:
        """The key hyperparameters tuned for arm ``label`` of registered ``method``: parameter → values per profile."""
        return {**self.methods.get(method or "", {}), **self.keys.get(label, {})}

    def candidates(
        self, label: str, profile: str, method: str | None = None, optimizer: str | None = None
    ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Arm ``label``'s (of registered ``method``, running ``optimizer`` in place of the experiment's where not
        None) candidates at ``profile``, in the order tried: (config fields, method parameters)."""
        if label in self.shared:  # takes another arm's choice: no candidates of its own
            return []
        fields = {n: tuple(v.get(profile, ())) for n, v in self.grid_for(optimizer).items()}
        params = {n: tuple(v.get(profile, ())) for n, v in self.key_grid(label, method).items()}
        params = {n: v for n, v in params.items() if v}  # a key without values at this profile is not tuned there
        names, values = [*fields, *params], [*fields.values(), *params.values()]
        out = []
        for point in itertools.product(*values):
            chosen = dict(zip(names, point))
            out.append(({n: chosen[n] for n in fields}, {n: chosen[n] for n in params}))
        return out

    def described(
        self,
        labels: Sequence[str],
        profile: str,
        methods: Sequence[str] | None = None,
        optimizers: Sequence[str | None] | None = None,
    ) -> str:
        """The grid of ``labels`` (arms of registered ``methods``, running ``optimizers`` in place of the experiment's
        where not None) at ``profile`` in words: 'lr ∈ {0.01, 0.1}; FedProx mu ∈ {…}; Per-FedAvg (sgd) lr ∈ {…}'."""
        parts = [f"{n} ∈ {{{', '.join(str(v) for v in vs.get(profile, ()))}}}" for n, vs in self.grid.items()]
        for label, optimizer in zip(labels, optimizers or [None] * len(labels)):
            if optimizer is not None:
                for n, vs in self.grid_for(optimizer).items():
                    parts.append(f"{label} ({optimizer}) {n} ∈ {{{', '.join(str(v) for v in vs.get(profile, ()))}}}")
        for label, method in zip(labels, methods or [None] * len(labels)):
            for n, vs in self.key_grid(label, method).items():
                if not vs.get(profile):
                    continue
                parts.append(f"{label} {n} ∈ {{{', '.join(str(v) for v in vs.get(profile, ()))}}}")
        return "; ".join(parts)


SGD_LRS = (0.01, 0.05, 0.1)  # FedPG's grid for SGD; it holds the cpu profile's 0.05 and the papers' 0.01
ADAM_LRS = (3e-4, 1e-3, 3e-3)  # around Adam's 1e-3, which pMixFed and FedFac use for every method
OPTIMIZER_LRS = {"sgd": SGD_LRS, "adam": ADAM_LRS}  # the grid of an arm that runs another optimizer than its experiment
TUNING_SEED = 100  # the first tuning seed; never a verdict seed (those count from 0)
# Every choice is made on the mean over two tuning seeds, so that it does not ride one seed (a rate at which either
# seed diverges or collapses is excluded: tuning_score).
TUNING_SEEDS = (TUNING_SEED, TUNING_SEED + 1)
# The one key hyperparameter of a baseline, where its paper names one, tuned with the learning rate wherever the
# method runs: FedProx's proximal weight μ (FedProx's own grid {0.001, 0.01, 0.1, 1} without 1) and Ditto's λ (Ditto's
# {0.01, 0.1, 1, 2} without 2); each grid holds the package's default (μ = 0.01, λ = 0.1).
KEY_GRIDS: dict[str, dict[str, tuple[float, ...]]] = {"fedprox": {"mu": (0.001, 0.01, 0.1)}, "ditto": {"lam": (0.01, 0.1, 1.0)}}


def lr_tuning(
    lrs: Sequence[float],
    paper: str = "",
    profiles: Sequence[str] = ("cpu", "paper"),
    keys: Mapping[str, Mapping[str, Sequence[Any]]] = KEY_GRIDS,
) -> Tune:
    """The learning rate of every arm chosen from ``lrs`` (an arm that runs another optimizer than the experiment's,
    from that optimizer's grid in :data:`OPTIMIZER_LRS`), and the key hyperparameter of the methods in ``keys``
    (method → {parameter: values}; default :data:`KEY_GRIDS`) from its values, on :data:`TUNING_SEEDS` at
    ``profiles`` (``paper``: what the paper states for every method); the smoke profile runs the arms as declared."""
    return Tune(
        grid={"lr": dict.fromkeys(profiles, tuple(lrs))},
        seeds=dict.fromkeys(profiles, list(TUNING_SEEDS)),
        paper={"*": paper} if paper else {},
        methods={m: {n: dict.fromkeys(profiles, tuple(v)) for n, v in ps.items()} for m, ps in keys.items()},
        optimizers={o: {"lr": dict.fromkeys(profiles, tuple(v))} for o, v in OPTIMIZER_LRS.items()},
    )


def best_on_validation(scores: Sequence[float]) -> int:
    """The index of the highest mean validation score (the first on ties): how every tuning choice is made."""
    if not len(scores):
        raise ValueError("best_on_validation needs at least one candidate")
    best = 0
    for i, score in enumerate(scores):
        if score > scores[best]:
            best = i
    return best


# How a cell's candidates are chosen (:func:`_tune`): (cell, each candidate's tuning records in the order tried) → index
Chooser = Callable[[tuple[Any, ...], Sequence[Sequence[Mapping[str, Any]]]], int]


def excluded(record: Mapping[str, Any], floor: float | None = None) -> str:
    """Why a tuning run rules its candidate out ('' when it does not): 'diverged' (recorded without a summary), or,
    given the ``floor`` (a fraction: chance plus :data:`~pflnb.experiments.claims.FLOOR_MARGIN`), 'collapsed' when
    its best validation accuracy or its last evaluation's sits below the floor (it never trained, or fell back to
    chance by its end)."""
    if record.get("status") == "diverged":
        return "diverged"
    if floor is None:
        return ""
    evals = [e for e in record.get("evals") or [] if e.get("val_acc") is not None]
    best = float(record["summary"]["best_val_acc"])
    last = float(np.mean(evals[-1]["val_acc"])) if evals else best  # the client mean, as the summary's
    if best < floor or last < floor:
        return f"collapsed (best validation {100 * best:.1f} %, last {100 * last:.1f} %)"
    return ""


def tuning_score(record: Mapping[str, Any], floor: float | None = None) -> float:
    """A tuning run's score: its best mean validation accuracy; −∞ for a run :func:`excluded` rules out (diverged, or
    collapsed below ``floor``), so that a candidate at which any tuning seed diverges or collapses has a mean of −∞
    over the seeds and is never chosen over one that trained on every seed."""
    if excluded(record, floor):
        return -math.inf
    return float(record["summary"]["best_val_acc"])


@dataclass(frozen=True)
class Experiment:
    """A named experiment: ``arms`` × ``seeds`` (× every ``grid`` value) on ``dataset``.

    ``fields`` maps a profile (or a ``(profile, dataset)`` pair, looked up first) to the config fields this experiment
    sets over the profile table (the second and last config layer; arms add their own). ``seeds`` maps a profile to
    its seeds. ``grid`` maps a config field to its values per profile (every arm runs at every value).
    ``only`` maps an arm's label to the profiles it runs at (an arm not named runs at every profile).
    ``datasets`` maps a profile to the dataset it runs (default: ``dataset``); a dataset the profile table has no
    row for (the paper profile's CIFAR) starts from the declared ``dataset``'s row, its fields then set what differs.
    ``settings`` maps a profile to named data settings (:class:`Setting`): every setting runs its arms × seeds, in
    the order declared (settings, then arms, then seeds), and the table gets a ``setting`` column; an experiment
    with settings has no grid.
    ``tune``: an equal tuning budget (:class:`Tune`) whose choices every run of an arm uses.
    ``protocol``: an evaluation protocol for every run. ``fallback``: a dataset that cannot be loaded here falls back
    to digits5-lite with a note (:func:`~pflnb.experiments.config.with_available_data`). ``job``: what each run
    computes, ``job(config, arm)`` (default: the engine run, :class:`~pflnb.experiments.jobs.RunJob`, under
    ``protocol``); a paper whose runs also compute something from their final states declares its job here.
    ``paper_setting``: what the paper itself states for a field of :data:`SCALE_FIELDS` (or of ``grid``) where the paper profile's
    declared value is not the paper's statement: None where the paper states nothing for this experiment (the paper
    profile's value is our choice), else the paper's own setting in words (a model pflnb lacks, a setting the paper
    states per table). A stand-in quotes these instead of the paper profile's values (:func:`setting_stand_in`);
    an experiment with no run at the paper profile (an analogue) is compared with these alone.
    """

    name: str
    doc: str
    dataset: str
    arms: tuple[Arm, ...]
    seeds: Mapping[str, Sequence[int]]
    fields: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    grid: Mapping[str, Mapping[str, Sequence[Any]]] = field(default_factory=dict)
    protocol: EvalProtocol | None = None
    fallback: bool = False
    job: Callable[[ExperimentConfig, Arm], Job] | None = None
    only: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    settings: Mapping[str, tuple[Setting, ...]] = field(default_factory=dict)
    datasets: Mapping[str, str] = field(default_factory=dict)
    tune: Tune | None = None
    paper_setting: Mapping[str, str | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.paper_setting) - set(self.scale_fields))
        if unknown:
            raise ValueError(f"experiment {self.name!r}: paper_setting of {unknown}; choose from {self.scale_fields}")
        empty = sorted(k for k, v in self.paper_setting.items() if v is not None and not str(v).strip())
        if empty:
            raise ValueError(f"experiment {self.name!r}: paper_setting of {empty} is empty; None means not stated")
        labels = [a.label for a in self.arms]
        if not labels or len(set(labels)) != len(labels):
            raise ValueError(f"experiment {self.name!r} needs arms with distinct labels, got {labels}")
        keyed = [k[0] if isinstance(k, tuple) else k for k in self.fields]
        for profile in (*self.seeds, *keyed, *(p for values in self.grid.values() for p in values), *self.settings):
            if profile not in PROFILES:
                raise ValueError(f"experiment {self.name!r}: unknown profile {profile!r}; choose from {PROFILES}")
        if self.settings and self.grid:
            raise ValueError(f"experiment {self.name!r}: an experiment with settings has no grid")
        for label in (a for ss in self.settings.values() for s in ss for a in s.arms or ()):
            self.arm(label)  # a setting runs arms that exist
        if self.tune is not None:
            for label in self.tune.keys:
                self.arm(label)  # a key hyperparameter of an arm that exists
            for label, source in self.tune.shared.items():
                self.arm(label), self.arm(source)  # both arms exist
                if source in self.tune.shared or label in self.tune.keys:
                    raise ValueError(
                        f"experiment {self.name!r}: arm {label!r} takes {source!r}'s tuned choice, so it has no keys of "
                        "its own and its source is tuned itself"
                    )
            for profile, tune_seeds in self.tune.seeds.items():
                shared = set(tune_seeds) & set(self.seeds.get(profile, ()))
                if shared:
                    raise ValueError(
                        f"experiment {self.name!r}: tuning seeds {sorted(shared)} are verdict seeds at {profile!r}; "
                        "tune on other seeds"
                    )
            if "lr" in self.tune.grid:
                for a in self.arms:  # a fixed step size would keep the tuned learning rate from reaching the arm
                    steps = getattr(get_algorithm_class(a.method), "step_params", ())
                    for profile in self.tune.grid["lr"]:
                        fixed = sorted(n for n in steps if a.params_at(profile).get(n) is not None)
                        if fixed:
                            raise ValueError(
                                f"experiment {self.name!r}: arm {a.label!r} fixes {fixed} at {profile!r}, which "
                                f"{a.method} uses instead of the learning rate, so the tuned lr would not reach it; "
                                "leave them unset (they follow the lr) or tune them as the arm's keys"
                            )

    @property
    def scale_fields(self) -> tuple[str, ...]:
        """The fields a stand-in compares with the paper's setting: :data:`SCALE_FIELDS` and the fields the
        experiment sweeps (``grid``: Fig. 3's α, Fig. 6's γ), whose values the paper also states."""
        return (*SCALE_FIELDS, *(f for f in self.grid if f not in SCALE_FIELDS))

    def arm(self, label: str) -> Arm:
        """The arm called ``label``."""
        for a in self.arms:
            if a.label == label:
                return a
        raise KeyError(f"experiment {self.name!r} has no arm {label!r}; it has {[a.label for a in self.arms]}")

    def arm_optimizer(self, label: str, profile: str) -> str | None:
        """The optimizer arm ``label`` runs in place of the experiment's at ``profile`` (:func:`runs_with`: a method
        that makes its own plain gradient steps in an experiment on Adam, say), else None."""
        method = self.arm(label).method
        if get_algorithm_class(method).steps_with is None:
            return None
        base = self.base(profile).replace(method=method)
        return None if runs_with(base) is base else runs_with(base).optimizer

    def base(self, profile: str, dataset: str | None = None, **overrides: Any) -> ExperimentConfig:
        """The experiment's config at ``profile`` on ``dataset`` (default: the declared one): the profile table, then
        the experiment's fields, then ``overrides``."""
        default = self.datasets.get(profile, self.dataset)
        if dataset not in (None, default) and not has_row(profile, dataset) and (profile, dataset) not in self.fields:
            raise ValueError(
                f"experiment {self.name!r} declares no fields for {dataset!r} at profile {profile!r}, and the profile "
                "table has no row for it"
            )
        dataset = dataset or default
        fields = self.fields.get((profile, dataset), self.fields.get(profile, {}))
        row = dataset if has_row(profile, dataset) else self.dataset  # a dataset the table lacks: the declared one's row
        cfg = profile_config(profile, row, **fields).replace(dataset=dataset, **overrides)
        return with_available_data(cfg) if self.fallback else cfg

    def make_job(self, cfg: ExperimentConfig, arm: Arm) -> Job:
        """The job of one run (:attr:`job`, default the engine run under :attr:`protocol`)."""
        return RunJob(cfg, self.protocol) if self.job is None else self.job(cfg, arm)

    def seeds_at(self, profile: str) -> list[int]:
        """The experiment's seeds at ``profile``."""
        if profile not in self.seeds:
            raise ValueError(f"experiment {self.name!r} declares no seeds for profile {profile!r}; it has {sorted(self.seeds)}")
        return list(self.seeds[profile])

    def runs(
        self,
        profile: str,
        seeds: Sequence[int] | None = None,
        dataset: str | None = None,
        choice: Choice | None = None,
        **overrides: Any,
    ) -> list[tuple[dict[str, Any], ExperimentConfig]]:
        """Every run, as (labels, config): labels hold ``label``, ``seed`` and each grid field's value (``setting``,
        ``label`` and ``seed`` for an experiment with settings). ``choice(labels)`` → (config fields, method
        parameters) that a run takes over its arm's (the tuned values; labels without ``seed``)."""
        if self.settings:
            return self._setting_runs(profile, seeds, dataset, choice, **overrides)
        base = self.base(profile, dataset, **overrides)
        seeds = self.seeds_at(profile) if seeds is None else list(seeds)
        names = list(self.grid)
        values = [self.grid[n].get(profile, ()) for n in names]
        out = []
        for arm in self.arms:
            if profile not in self.only.get(arm.label, PROFILES):
                continue
            for point in itertools.product(*values):
                cell = {"label": arm.label, **dict(zip(names, point))}
                for seed in seeds:
                    cfg = arm_config(base, arm, arm.params_at(profile), seed, choice, cell)
                    if cfg is not None:
                        out.append(({**cell, "seed": seed}, cfg.replace(**dict(zip(names, point)))))
        return out

    def _setting_runs(
        self, profile: str, seeds: Sequence[int] | None, dataset: str | None, choice: Choice | None, **overrides: Any
    ) -> list[tuple[dict[str, Any], ExperimentConfig]]:
        if profile not in self.settings:
            raise ValueError(f"experiment {self.name!r} declares no settings for profile {profile!r}")
        base = self.base(profile, dataset, **overrides)
        seeds = self.seeds_at(profile) if seeds is None else list(seeds)
        out = []
        for setting in self.settings[profile]:
            at = base.replace(**dict(setting.fields))
            for arm in self.arms:
                if (setting.arms is None or arm.label in setting.arms) and profile in self.only.get(arm.label, PROFILES):
                    cell = {"setting": setting.name, "label": arm.label}
                    for seed in seeds:
                        cfg = arm_config(at, arm, arm.params_at(profile), seed, choice, cell)
                        if cfg is not None:
                            out.append(({**cell, "seed": seed}, cfg))
        return out

    def tuning_runs(
        self, profile: str, dataset: str | None = None, **overrides: Any
    ) -> list[tuple[dict[str, Any], ExperimentConfig]]:
        """Every tuning run at ``profile`` (none without tuning seeds there): each arm at each of its candidates
        (:meth:`Tune.candidates`) on each tuning seed; labels as :meth:`runs`', plus the ``candidate``'s index."""
        if self.tune is None or not self.tune.seeds.get(profile):
            return []
        seeds = list(self.tune.seeds[profile])
        options = {
            a.label: self.tune.candidates(a.label, profile, a.method, self.arm_optimizer(a.label, profile)) for a in self.arms
        }
        most = max(len(o) for o in options.values())
        out = []
        for k in range(most):

            def candidate(cell: Mapping[str, Any], k: int = k) -> tuple[dict[str, Any], dict[str, Any]] | None:
                return options[cell["label"]][k] if k < len(options[cell["label"]]) else None

            runs = self.runs(profile, seeds, dataset, choice=candidate, **overrides)
            out += [({**lab, "candidate": k}, cfg) for lab, cfg in runs]
        return out


@dataclass
class ExperimentResult:
    """The runs of one experiment: ``table`` has one row per run (its labels, then the summary metrics of
    :func:`~pflnb.experiments.tables.summary_table`); ``records`` are the runs' records in the same order."""

    experiment: Experiment
    profile: str
    table: pd.DataFrame
    records: list[dict[str, Any]]
    tuning: pd.DataFrame | None = None

    def tuned(self, label: str) -> str:
        """Arm ``label``'s tuned values in words ('lr=0.03, mu=0.01'; '' without tuning), per setting or grid point
        where it was tuned more than once."""
        if self.tuning is None or self.tuning.empty:
            return ""
        source = self.experiment.tune.shared.get(label) if self.experiment.tune else None
        if source:
            return f"{self.tuned(source)} (the choice of {source})"
        chosen = self.tuning[(self.tuning["label"] == label) & self.tuning["chosen"]]
        names = [c for c in chosen.columns if c.startswith("tuned:")]
        cells = [c for c in chosen.columns if c in _CELL_COLUMNS or c in self.experiment.grid]
        parts = []
        for _, row in chosen.drop_duplicates([*cells, *names]).iterrows():
            values = ", ".join(f"{n[6:]}={row[n]}" for n in names if pd.notna(row[n]))
            parts.append((" ".join(str(row[c]) for c in cells) + ": " if cells else "") + values)
        return "; ".join(parts)

    def tuning_note(self, labels: Sequence[str]) -> str:
        """The claims' note on tuning: the grid, the tuning seeds, each arm's choice and the paper's stated values."""
        tune = self.experiment.tune
        if self.tuning is None or self.tuning.empty or tune is None:
            return ""
        seeds = " ".join(str(s) for s in tune.seeds[self.profile])
        chosen = []
        for label in labels:
            stated = tune.paper.get(label, tune.paper.get("*"))
            stated = f" (paper: {stated})" if stated else ""
            chosen.append(f"{label} {self.tuned(label)}{stated}")
        exp = self.experiment
        grid = tune.described(
            labels, self.profile, [exp.arm(l).method for l in labels], [exp.arm_optimizer(l, self.profile) for l in labels]
        )
        note = (
            f"{exp.name} tuned on mean best validation accuracy, seed(s) {seeds} (a value at which a seed diverged or "
            f"collapsed below the floor ruled out), over {grid}: " + "; ".join(chosen)
        )
        beyond = self.extended_values(labels)
        if beyond:
            note += (
                f" (grid-edge rule: a choice at an edge of its grid got one more value beyond that edge, up to "
                f"{EDGE_STEPS}, every arm alike; tried beyond the grid: {beyond})"
            )
        return note

    def extended_values(self, labels: Sequence[str]) -> str:
        """The values the grid-edge rule tried beyond the declared grid for the arms ``labels`` ('' for none)."""
        t = self.tuning
        if t is None or t.empty or "step" not in t.columns:
            return ""
        names = [c for c in t.columns if c.startswith("tuned:")]
        cells = [c for c in t.columns if c in _CELL_COLUMNS or c in self.experiment.grid]
        shown = []
        for _, row in t[(t.step > 0) & t["label"].isin(labels)].drop_duplicates([*cells, "label", "candidate"]).iterrows():
            values = ", ".join(f"{n[6:]}={row[n]}" for n in names if pd.notna(row[n]))
            shown.append(" ".join(str(row[c]) for c in (*cells, "label") if c in row) + f" {values}")
        return "; ".join(shown)

    def values(self, label: str, metric: str = "test_acc", **where: Any) -> dict[int, float]:
        """{seed: metric} of arm ``label`` (at the grid point ``where``, e.g. ``batch_size=32``)."""
        rows = self.table[self.table["label"] == label]
        for name, value in where.items():
            rows = rows[rows[name] == value]
        if rows.empty:
            raise KeyError(f"{self.experiment.name}: no runs of {label!r} at {where}")
        return {int(s): float(v) for s, v in zip(rows["seed"], rows[metric])}

    def collapsed(self, labels: Sequence[str], floor: float, **where: Any) -> list[str]:
        """The verdict runs of the arms ``labels`` (at the grid point ``where``) that collapsed: diverged, or best or
        last validation accuracy below ``floor`` (a fraction; :func:`excluded`), as 'FedPG seed 3 (collapsed (...))'."""
        out = []
        for row, record in zip(self.table.to_dict("records"), self.records):
            if row["label"] not in labels or any(row.get(k) != v for k, v in where.items()) or not isinstance(record, Mapping):
                continue
            summary = record.get("summary")
            if record.get("status") == "diverged" or (isinstance(summary, Mapping) and "best_val_acc" in summary):
                why = excluded(record, floor)
                if why:
                    out.append(f"{row['label']} seed {int(row['seed'])} ({why})")
        return out

    def labelled(self, label: str) -> list[dict[str, Any]]:
        """The records of arm ``label``."""
        return [r for r, lab in zip(self.records, self.table["label"]) if lab == label]


def run_experiment(
    paper: Paper,
    name: str,
    profile: str,
    *,
    seeds: Sequence[int] | None = None,
    dataset: str | None = None,
    executor: Executor | None = None,
    progress: bool = True,
    arms: Sequence[str] | None = None,
    **overrides: Any,
) -> ExperimentResult:
    """Run (or load from the cache) every run of ``paper``'s experiment ``name`` at ``profile`` on ``executor``
    (default: the environment's): the declared seeds unless ``seeds`` are given, the declared dataset unless
    ``dataset`` is, every arm unless ``arms`` (labels) names some (each tuned and seeded as in the whole experiment:
    the same runs, the same cache keys); ``overrides`` are config fields for every run (``device``, ``data_root``,
    ...). Each record gets its arm's ``label``."""
    experiment = paper.experiment(name)
    if isinstance(arms, str):
        raise TypeError(f"arms must be a sequence of arm labels, not the string {arms!r}")
    if arms is not None:
        unknown = sorted(set(arms) - {a.label for a in experiment.arms})
        if unknown:
            raise ValueError(f"experiment {name!r} has no arm(s) {unknown}; it has {[a.label for a in experiment.arms]}")
        sources = {experiment.tune.shared.get(a) for a in arms} - {None} if experiment.tune is not None else set()
        missing = sorted(sources - set(arms))
        if missing:
            raise ValueError(f"arms {sorted(arms)} take the tuned choice of {missing}; name those too")
        experiment = _with_arms(experiment, arms)
    tuning, choice = _tune(experiment, profile, seeds, dataset, executor, progress, **overrides)
    runs = experiment.runs(profile, seeds, dataset, choice=choice, **overrides)
    records = _execute(experiment, runs, executor, progress)
    labels = pd.DataFrame([lab for lab, _ in runs])
    metrics = summary_table(records).drop(columns=["method", "dataset", "seed"])
    return ExperimentResult(experiment, profile, pd.concat([labels, metrics], axis=1), records, tuning)


def _with_arms(experiment: Experiment, arms: Sequence[str]) -> Experiment:
    """``experiment`` with the arms ``arms`` only; its tuning keys and shared choices and its settings' arm lists
    narrowed to them (each kept arm's runs unchanged)."""
    keep = set(arms)
    tune = experiment.tune
    if tune is not None:
        tune = dataclasses.replace(
            tune,
            keys={k: v for k, v in tune.keys.items() if k in keep},
            shared={k: v for k, v in tune.shared.items() if k in keep},
        )
    settings = {
        profile: tuple(s if s.arms is None else dataclasses.replace(s, arms=tuple(a for a in s.arms if a in keep)) for s in ss)
        for profile, ss in experiment.settings.items()
    }
    kept = tuple(a for a in experiment.arms if a.label in keep)
    return dataclasses.replace(experiment, arms=kept, tune=tune, settings=settings)


def _execute(
    experiment: Experiment,
    runs: list[tuple[dict[str, Any], ExperimentConfig]],
    executor: Executor | None,
    progress: bool,
    tuning: bool = False,
) -> list[dict[str, Any]]:
    make = (lambda cfg, arm: RunJob(cfg, experiment.protocol)) if tuning else experiment.make_job
    jobs = [make(cfg, experiment.arm(lab["label"])) for lab, cfg in runs]
    kind = "tuning" if tuning else "verdict"
    records = execute(jobs, executor, progress=progress, kind=kind, experiment=experiment.name)
    for (lab, _), record in zip(runs, records):
        record["label"] = lab["label"]
    warn_diverged(records)
    return records


EDGE_STEPS = 4  # the grid-edge rule's cap: at most this many steps beyond each edge of each tuned value


def beyond_edge(tried: Sequence[Any], chosen: Any) -> Any | None:
    """The grid-edge rule's next value: when ``chosen`` is the smallest (largest) of the numeric, positive values
    ``tried`` of one tuned field, one geometric step beyond that edge (the ratio of the edge to its neighbour, e.g.
    3e-4 → 9e-5 below {3e-4, 1e-3, 3e-3}, 0.1 → 0.2 above {0.01, 0.05, 0.1}); None when it is interior or the
    values are not positive numbers."""
    values = sorted({v for v in tried if isinstance(v, int | float) and not isinstance(v, bool)})
    if len(values) < 2 or len(values) != len(set(tried)) or values[0] <= 0 or chosen not in values:
        return None
    if chosen == values[0]:
        nxt = values[0] * values[0] / values[1]
    elif chosen == values[-1]:
        nxt = values[-1] * values[-1] / values[-2]
    else:
        return None
    return float(f"{nxt:.3g}")  # 1e-4, not 9.99e-05: the value as one would write it


def _tune(
    experiment: Experiment,
    profile: str,
    seeds: Sequence[int] | None,
    dataset: str | None,
    executor: Executor | None,
    progress: bool,
    chooser: Chooser | None = None,
    **overrides: Any,
) -> tuple[pd.DataFrame | None, Choice | None]:
    """The tuning runs of ``experiment`` (jobs like any other: cached, on the executor), one row each (labels, the
    candidate's values as ``tuned:<name>``, ``best_val_acc``, ``chosen``, ``step``), and the choice per cell.

    Every cell (setting or grid point, arm) is tuned alike: first on the declared grid (``step`` 0); then, by the
    standard grid-edge rule, while its choice sits at an edge of a tuned numeric value, one more candidate one step
    beyond that edge (:func:`beyond_edge`, the other values held at their choice), until the choice is interior or
    :data:`EDGE_STEPS` steps beyond an edge were taken (``step`` counts them).

    The choice is the candidate of the best mean :func:`tuning_score` over the tuning seeds (the first on ties; a
    candidate at which a seed diverged or collapsed below the experiment's floor scores −∞, and a cell none of whose
    candidates trained on every seed is not extended: its choice is its first candidate, and ``excluded`` in its rows
    says why); a ``chooser`` replaces that
    rule (it gets the cell and each candidate's records, in the order tried, and returns the index chosen), e.g.
    :class:`~pflnb.experiments.halving.Halving` to measure successive halving on the same runs."""
    runs = experiment.tuning_runs(profile, dataset, **overrides)
    if not runs:
        return None, None
    tune = experiment.tune
    if seeds is not None and set(seeds) & set(tune.seeds[profile]):
        raise ValueError(f"seeds {sorted(seeds)} include the tuning seeds {list(tune.seeds[profile])}; choose others")
    cells = [c for c in runs[0][0] if c not in ("seed", "candidate")]  # a run's labels but its seed
    key = lambda lab: tuple(lab[c] for c in cells)  # noqa: E731
    tried: dict[tuple[Any, ...], list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    steps: dict[tuple[Any, ...], list[int]] = {}
    for lab, _ in runs:
        if lab["candidate"] == len(tried.setdefault(key(lab), [])):
            arm = experiment.arm(lab["label"])
            options = tune.candidates(arm.label, profile, arm.method, experiment.arm_optimizer(arm.label, profile))
            tried[key(lab)].append(options[lab["candidate"]])
            steps.setdefault(key(lab), []).append(0)
    rows: list[dict[str, Any]] = []
    records: dict[tuple[Any, ...], dict[int, list[dict[str, Any]]]] = {}  # cell → candidate → its records (chooser)

    chance = 1.0 / NUM_CLASSES.get(dataset, 10) if dataset else experiment_chance(experiment, profile)
    floor = R.Floor(chance).points / 100  # a collapsed tuning run rules out its candidate

    def score(batch: list[tuple[dict[str, Any], ExperimentConfig]]) -> None:
        for (lab, _), record in zip(batch, _execute(experiment, batch, executor, progress, tuning=True)):
            fields, params = tried[key(lab)][lab["candidate"]]
            values = {f"tuned:{n}": v for n, v in {**fields, **params}.items()}
            rows.append(
                {
                    **lab,
                    **values,
                    "best_val_acc": tuning_score(record, floor),
                    "excluded": excluded(record, floor),
                    "step": steps[key(lab)][lab["candidate"]],
                }
            )
            if chooser is not None:  # only a chooser reads the records; the grid's rule reads the table
                records.setdefault(key(lab), {}).setdefault(lab["candidate"], []).append(record)

    def means(cell: tuple[Any, ...]) -> list[float]:
        table = pd.DataFrame(rows)
        mean = table.groupby([*cells, "candidate"], sort=False)["best_val_acc"].mean()
        return [float(mean.loc[(*cell, k)]) for k in range(len(tried[cell]))]

    def choose() -> dict[tuple[Any, ...], int]:
        if chooser is not None:
            return {cell: chooser(cell, [records[cell][k] for k in range(len(options))]) for cell, options in tried.items()}
        return {cell: best_on_validation(means(cell)) for cell in tried}

    score(runs)
    taken: dict[tuple[Any, ...], int] = {}  # (cell, name, side) → steps beyond that edge
    while True:
        chosen, new = choose(), {}
        for cell, options in tried.items():
            if means(cell)[chosen[cell]] == -math.inf:  # no candidate trained on every seed: no edge to follow
                continue
            fields, params = options[chosen[cell]]
            for name, value in {**fields, **params}.items():
                values = [{**f, **p}[name] for f, p in options]
                nxt = beyond_edge(values, value)
                side = (cell, name, nxt is not None and nxt > value)
                if nxt is None or taken.get(side, 0) >= EDGE_STEPS or nxt in values:
                    continue
                taken[side] = taken.get(side, 0) + 1
                where = fields if name in fields else params
                candidate = ({**fields, name: nxt}, dict(params)) if where is fields else (dict(fields), {**params, name: nxt})
                new[cell] = candidate
                break  # one new candidate per cell and pass: the next pass re-chooses with it
        if not new:
            break
        for cell, candidate in new.items():
            tried[cell].append(candidate)
            steps[cell].append(max(steps[cell]) + 1)

        def extension(cell: Mapping[str, Any], new: dict = new) -> tuple[dict[str, Any], dict[str, Any]] | None:
            return new.get(key(cell))

        batch = experiment.runs(profile, tune.seeds[profile], dataset, choice=extension, **overrides)
        score([({**lab, "candidate": len(tried[key(lab)]) - 1}, cfg) for lab, cfg in batch])
    table = pd.DataFrame(rows)
    table["chosen"] = [chosen[key(row)] == row["candidate"] for _, row in table.iterrows()]

    def choice(cell: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        source = tune.shared.get(cell.get("label"))  # an arm that takes another arm's choice
        at = key({**cell, "label": source} if source else cell)
        return tried[at][chosen[at]]

    return table, choice


def tune_experiment(
    experiment: Experiment,
    profile: str,
    executor: Executor | None = None,
    progress: bool = True,
    chooser: Chooser | None = None,
) -> tuple[pd.DataFrame | None, Choice | None]:
    """``experiment``'s tuning at ``profile`` on its declared seeds and data, as :func:`run_experiment` does it (the
    runs loaded from the cache where they are): its table and choice (:func:`_tune`), under ``chooser`` if given."""
    return _tune(experiment, profile, None, None, executor, progress, chooser=chooser)


def tuning_columns(tuning: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(cells, values) of a tuning table (:func:`_tune`): the columns naming a cell (setting or grid point, arm) and
    the tuned values (``tuned:<name>``)."""
    values = [c for c in tuning.columns if c.startswith("tuned:")]
    cells = [c for c in tuning.columns if c not in ("seed", "candidate", "best_val_acc", "excluded", "chosen", "step", *values)]
    return cells, values


def tuned_experiments(
    papers: Sequence[Paper], profile: str, executor: Executor | None = None, progress: bool = True
) -> Iterator[tuple[Paper, Experiment, pd.DataFrame]]:
    """(paper, experiment, tuning table) of every experiment of ``papers`` tuned at ``profile`` (:func:`tune_experiment`:
    the tuning runs loaded from the cache where they are)."""
    for paper in papers:
        for experiment in paper.experiments:
            if experiment.tune is None or profile not in experiment.tune.seeds:
                continue
            tuning, _ = tune_experiment(experiment, profile, executor, progress)
            if tuning is not None and not tuning.empty:
                yield paper, experiment, tuning


EDGE_COLUMNS = ["experiment", "cell", "chosen", "at edge on the grid", "at edge after the rule", "no value trained"]


def edge_cells(tuning: pd.DataFrame) -> pd.DataFrame:
    """One row per tuned cell (setting or grid point, arm) of one experiment's tuning table: the cell, its final
    choice, whether its choice on the declared grid sat at an edge of a tuned numeric value (``at edge on the grid``),
    and whether its final choice still sits at one after the grid-edge rule (``at edge after the rule``: the cap was
    reached, so the arm was not tuned to an interior value); ``no value trained``: every value diverged or collapsed on
    a tuning seed, so the cell was never extended and its choice (the first value) is no choice (neither edge flag)."""
    cells, values = tuning_columns(tuning)
    mean = tuning.groupby([*cells, "candidate"], sort=False).agg(
        **{v: (v, "first") for v in values}, val=("best_val_acc", "mean"), step=("step", "first"), chosen=("chosen", "first")
    )
    rows = []
    for cell, group in mean.reset_index().groupby(cells, sort=False):
        cell = cell if isinstance(cell, tuple) else (cell,)
        flags = []
        for rows_, is_final in ((group[group.step == 0], False), (group, True)):
            pick = group[group.chosen].iloc[0] if is_final else rows_.iloc[best_on_validation(list(rows_.val))]
            flags.append(
                any(
                    beyond_edge([r[v] for _, r in rows_.iterrows()], pick[v]) is not None
                    for v in values
                    if pd.notna(pick[v]) and rows_[v].nunique() > 1
                )
            )
        final = group[group.chosen].iloc[0]
        chosen = ", ".join(f"{v[6:]}={final[v]}" for v in values if pd.notna(final[v]))
        untrained = bool((group.val == -math.inf).all())  # every value diverged or collapsed: never extended
        edges = {"at edge on the grid": flags[0] and not untrained, "at edge after the rule": flags[1] and not untrained}
        rows.append({**dict(zip(cells, cell)), "chosen": chosen, **edges, "no value trained": untrained})
    return pd.DataFrame(rows, columns=[*cells, *EDGE_COLUMNS[2:]])


def edge_counts(tuning: pd.DataFrame) -> tuple[int, int, int]:
    """(tuned cells, cells whose choice on the declared grid sat at an edge, cells whose final choice still sits at an
    edge after the grid-edge rule: its cap reached) of one experiment's tuning table (:func:`edge_cells`)."""
    t = edge_cells(tuning)
    return len(t), int(t["at edge on the grid"].sum()), int(t["at edge after the rule"].sum())


def tuning_edges(results: Mapping[str, Any]) -> pd.DataFrame:
    """Every tuned cell of the experiments among ``results`` (what a notebook decides its claims on), one row each:
    the experiment, the cell in words ('Dir(0.1) FedAvg'), its choice and whether it sits at an edge of its grid
    before and after the grid-edge rule (:func:`edge_cells`). An arm still at an edge after the rule was not tuned
    to an interior value; the paper's page counts them (``pflnb tuning`` gives the same account from the cache)."""
    frames = []
    for name, res in results.items():
        if not isinstance(res, ExperimentResult) or res.tuning is None or res.tuning.empty:
            continue
        t = edge_cells(res.tuning)
        cells = [c for c in t.columns if c not in EDGE_COLUMNS]
        t.insert(0, "cell", [" ".join(str(r[c]) for c in cells) for _, r in t.iterrows()])
        frames.append(t.drop(columns=cells).assign(experiment=name)[EDGE_COLUMNS])
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=EDGE_COLUMNS)


def write_tuning_edges(results: Mapping[str, Any], path: str | Path) -> pd.DataFrame:
    """Write :func:`tuning_edges` of ``results`` to ``path`` (CSV) and return it."""
    table = tuning_edges(results)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False)
    return table


def edge_report(papers: Sequence[Paper], profile: str, executor: Executor | None = None, progress: bool = True) -> pd.DataFrame:
    """The grid-edge rule's account, one row per tuned experiment of ``papers`` at ``profile``: its tuned cells
    (setting, arm), how many chose a value at an edge of the declared grid, and how many still sit at an edge after
    the rule (its cap reached). The tuning runs are jobs like any other: loaded from the cache where they are."""
    rows = []
    for paper, experiment, tuning in tuned_experiments(papers, profile, executor, progress):
        cells, before, after = edge_counts(tuning)
        rows.append(
            {
                "paper": paper.name,
                "experiment": experiment.name,
                "cells": cells,
                "at edge on the grid": before,
                "at edge after the rule": after,
            }
        )
    return pd.DataFrame(rows, columns=["paper", "experiment", "cells", "at edge on the grid", "at edge after the rule"])


def tuning_summary(results: Mapping[str, Any]) -> pd.DataFrame:
    """One row per tuned (experiment, cell, arm) among ``results`` (what :func:`decide` reads): each candidate's mean
    best validation accuracy (%) over the tuning seeds, and the choice."""
    rows = []
    for name, res in results.items():
        if not isinstance(res, ExperimentResult) or res.tuning is None or res.tuning.empty:
            continue
        t = res.tuning
        cells, values = tuning_columns(t)
        mean = t.groupby([*cells, "candidate"], sort=False).agg(
            **{v: (v, "first") for v in values}, val=("best_val_acc", "mean"), chosen=("chosen", "first")
        )
        for cell, group in mean.reset_index().groupby(cells, sort=False):
            cell = cell if isinstance(cell, tuple) else (cell,)
            shown = [", ".join(f"{v[6:]}={row[v]}" for v in values if pd.notna(row[v])) for _, row in group.iterrows()]
            tried = " · ".join(f"{s}: {100 * row.val:.1f}" for s, (_, row) in zip(shown, group.iterrows()))
            chosen = next(s for s, (_, row) in zip(shown, group.iterrows()) if row.chosen)
            rows.append({"experiment": name, **dict(zip(cells, cell)), "validation accuracy (%)": tried, "chosen": chosen})
    return pd.DataFrame(rows)


# ---- claims as data ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cite:
    """Where a paper states a claim (section, table or figure) and a short quote of its text; a test finds the quote
    in the paper's text (whitespace normalised)."""

    where: str
    quote: str

    def __post_init__(self) -> None:
        if not self.where.strip() or len(self.quote.split()) < 3:
            raise ValueError(f"a citation needs where the paper says it and a quote of a few words, got {self!r}")

    def text(self) -> str:
        """'§5.2, Table 2: “quote”'."""
        return f"{self.where}: “{self.quote}”"


@dataclass(frozen=True)
class _Stated:
    """What every claim declares besides its rule: who states it and with which effect.

    - ``cite``: where the paper states it (:class:`Cite`); a claim without one is **our check** and says why in
      ``ours`` (a sanity check, a spec-only expectation, an implied reading): listed apart, never counted.
    - ``effect``: the paper's own effect, A − B in the units of our interval (points for accuracies), where the
      paper states numbers for both sides; per named part for a claim in parts. Shown beside ours, with where it
      lies against our interval.
    - ``wall_clock``: decided from wall-clock times (``check-outputs`` lists its changes like a timing file's).
    - ``failure_is_claim``: the paper claims that an arm fails, so the floor for arms that did not train is off.
    - ``by_construction``: why the statement holds by construction of our code or is a textbook property (an identity
      of linear algebra, a property of any such kernel or step): no evidence for the paper, so the row is **our
      check** whatever the paper states (its citation kept beside the reason), never a reproduced paper claim.
    - ``confound``: what else differs between the compared arms besides what the claim is about (a step budget, a
      learning rate, an artifact of the evaluation): the numbers cannot decide the claim, so a verdict that would be
      reproduced, partial or contradicted is **inconclusive (confounded: …)** (:data:`~pflnb.experiments.claims.CONFOUNDED`).
    """

    cite: Cite | None = field(default=None, kw_only=True)
    ours: str = field(default="", kw_only=True)
    effect: float | Mapping[str, float] | None = field(default=None, kw_only=True)
    wall_clock: bool = field(default=False, kw_only=True)
    failure_is_claim: bool = field(default=False, kw_only=True)
    by_construction: str = field(default="", kw_only=True)
    confound: str = field(default="", kw_only=True)

    @property
    def source(self) -> str:
        """``paper`` for a cited claim, ``ours`` for our own check (uncited, or holding by construction)."""
        return R.OURS_SOURCE if self.cite is None or self.by_construction else R.PAPER_SOURCE

    def cited(self) -> str:
        """The CSV's ``cite`` cell: the citation, or why the check is ours."""
        if self.by_construction:
            stated = f"; the paper: {self.cite.text()}" if self.cite is not None else ""
            return f"holds by construction or is a textbook property: {self.by_construction}{stated}"
        return self.cite.text() if self.cite is not None else self.ours


@dataclass(frozen=True)
class Compare(_Stated):
    """'``arm`` beats ``other`` (by ``margin``)' on ``metric`` of ``experiment``: :func:`~pflnb.experiments.claims.compare`
    on per-seed paired differences (``higher=False``: ``arm`` is claimed lower; ``names``: how the two are called in
    the result, default their labels; ``untestable``: profile → why the claim is not testable there)."""

    claim: str
    paper: str
    experiment: str
    arm: str
    other: str
    metric: str = "test_acc"
    margin: float = 0.0
    higher: bool = True
    where: Mapping[str, Any] = field(default_factory=dict)
    names: tuple[str, str] | None = None
    note: str = ""
    stand_in: str = ""
    untestable: Mapping[str, str] = field(default_factory=dict)

    def outcome(self, results: Mapping[str, ExperimentResult]) -> tuple[Outcome, list[int] | None]:
        res = _result(results, self.experiment)
        if res.profile in self.untestable:
            return R.not_testable(self.untestable[res.profile]), None
        a, b = res.values(self.arm, self.metric, **self.where), res.values(self.other, self.metric, **self.where)
        out = R.compare(a, b, margin=self.margin, higher=self.higher, names=self.names or (self.arm, self.other))
        return out, sorted(set(a) & set(b))


# The validation counterpart of a test metric: what :class:`Best` chooses the strongest competitor on
VALIDATION = {"test_acc": "best_val_acc"}


@dataclass(frozen=True)
class Best(_Stated):
    """'``arm`` is the best of ``others``' on ``metric``: :func:`~pflnb.experiments.claims.best`, ``arm`` against the
    competitor strongest on the metric's validation counterpart (:data:`VALIDATION`; a metric without one: against
    every competitor); ``untestable``: profile → why the claim is not testable there."""

    claim: str
    paper: str
    experiment: str
    arm: str
    others: tuple[str, ...]
    metric: str = "test_acc"
    higher: bool = True
    margin: float = 0.0  # the paper's claimed lead (points): reproduced only above it, 'smaller than claimed' below
    where: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""
    stand_in: str = ""
    untestable: Mapping[str, str] = field(default_factory=dict)

    def outcome(self, results: Mapping[str, ExperimentResult]) -> tuple[Outcome, list[int] | None]:
        res = _result(results, self.experiment)
        if res.profile in self.untestable:
            return R.not_testable(self.untestable[res.profile]), None
        a = res.values(self.arm, self.metric, **self.where)
        others = {o: res.values(o, self.metric, **self.where) for o in self.others}
        val = VALIDATION.get(self.metric)
        select = {o: res.values(o, val, **self.where) for o in self.others} if val else None
        out = R.best(a, others, select=select, name=self.arm, higher=self.higher, margin=self.margin)
        return out, sorted(a)


@dataclass(frozen=True)
class Derived(_Stated):
    """A claim decided from a paper's own view of the results: ``decide(results)`` returns the outcome of one of the
    rules of :mod:`pflnb.experiments.claims` and the seeds behind it, and optionally a mapping of values that fill the
    ``{placeholders}`` of the claim's text and note (a setting known only from the results, e.g. the largest N)."""

    claim: str
    paper: str
    decide: Callable[[Mapping[str, Any]], tuple[Any, ...]]
    note: str = ""
    stand_in: str = ""

    def outcome(self, results: Mapping[str, Any]) -> tuple[Outcome, Sequence[int] | None]:
        return self.decide(results)[:2]


ClaimSpec = Compare | Best | Derived


@dataclass(frozen=True)
class View:
    """A side result computed from the runs of one ``experiment`` (a table of their λ, their loss curves, ...): in
    :attr:`Paper.side` it is a stand-in wherever that experiment is, at the profile the results were computed at."""

    experiment: str


def _result(results: Mapping[str, Any], name: str) -> ExperimentResult:
    if name not in results:
        raise KeyError(f"no results of experiment {name!r}; run it first (run_experiment); have {sorted(results)}")
    return results[name]


@dataclass(frozen=True)
class Item:
    """One numbered item of the paper (a table, a figure, a theorem) and where the ledger tests it: ``claims``, the
    texts (or their beginnings) of the claims that test it, or ``reason`` why it is not tested here. ``status``:
    ``covered``, ``partly`` (``reason`` says what is missing), ``missing`` (testable at this scale but not run yet;
    ``reason`` says what it needs) or ``not testable`` (``reason`` says why)."""

    item: str
    shows: str
    claims: tuple[str, ...] = ()
    status: str = "covered"
    reason: str = ""

    def __post_init__(self) -> None:
        if self.status not in COVERAGE_STATUSES:
            raise ValueError(f"{self.item}: status must be one of {COVERAGE_STATUSES}, got {self.status!r}")
        if self.status in ("covered", "partly") and not self.claims:
            raise ValueError(f"{self.item}: a {self.status} item names the claims that test it")
        if self.status != "covered" and not self.reason and not (self.status == "not testable" and self.claims):
            raise ValueError(f"{self.item}: a {self.status} item says why (reason, or a not-testable ledger row)")


COVERAGE_STATUSES = ("covered", "partly", "missing", "not testable")


@dataclass(frozen=True)
class Paper:
    """A paper: its ``name`` (the package folder), ``title``, experiments and claims, declared as data, and its
    ``coverage``: every numbered item of the paper and the ledger rows that test it (:func:`coverage_table`).
    ``extended``: the names of the results (experiments, or values the notebook derives from them) that only the
    full reproduction computes: the sweeps and analogues added for coverage, which the main scope (``make
    reproduce``, the notebooks' ``extended=False``) skips to keep its cost down; :func:`decide` reports their claims
    as not run there. ``side``: every result a claim reads that is not an engine experiment (a theory check, a
    simulation, a table the notebook derives) → '' when it runs in the paper's own setting, else why it is a
    stand-in (another dataset, model or scale), or a :class:`View` of the experiment it is computed from;
    :func:`decide` refuses a claim that reads an undeclared one, so no claim's stand-in flag can be forgotten."""

    name: str
    title: str
    experiments: tuple[Experiment, ...]
    claims: tuple[ClaimSpec, ...] = ()
    coverage: tuple[Item, ...] = ()
    extended: tuple[str, ...] = ()
    side: Mapping[str, str | View] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = [e.name for e in self.experiments]
        if len(set(names)) != len(names):
            raise ValueError(f"paper {self.name!r} declares experiments with the same name: {names}")
        if len(set(self.extended)) != len(self.extended):
            raise ValueError(f"paper {self.name!r} names an extended result twice: {list(self.extended)}")
        for spec in self.claims:
            if isinstance(spec, Compare | Best):
                arms = (spec.arm, spec.other) if isinstance(spec, Compare) else (spec.arm, *spec.others)
                experiment = self.experiment(spec.experiment)
                for label in arms:
                    experiment.arm(label)  # a claim names arms that exist
        texts = [spec.claim for spec in self.claims]
        for item in self.coverage:
            unknown = [c for c in item.claims if not any(t.startswith(c) for t in texts)]
            if unknown:
                raise ValueError(f"coverage of {item.item} names claims that {self.name} does not declare: {unknown}")

    def experiment(self, name: str) -> Experiment:
        """The experiment called ``name``."""
        for e in self.experiments:
            if e.name == name:
                return e
        raise KeyError(f"paper {self.name!r} has no experiment {name!r}; it has {[e.name for e in self.experiments]}")


# Where a claim that a main-scope reproduction skipped runs (the shown verdict: 'not run (...)')
EXTENDED_RUN = "extended experiment: make reproduce-all, or the notebook with extended=True"


class _Skipped(Exception):
    """A rule read a result the main scope skips (:attr:`Paper.extended`)."""


class _Reads(Mapping[str, Any]):
    """``results`` as a rule sees them, remembering the names it read (a :class:`Derived` rule names no experiment);
    reading one of the ``skipped`` names that ``results`` lacks raises :class:`_Skipped`."""

    def __init__(self, results: Mapping[str, Any], skipped: Sequence[str] = ()) -> None:
        self._results, self._skipped, self.read = results, frozenset(skipped), []

    def __contains__(self, name: object) -> bool:
        return name in self._results or name in self._skipped

    def __getitem__(self, name: str) -> Any:
        if name not in self._results and name in self._skipped:
            raise _Skipped(name)
        value = self._results[name]
        if name not in self.read:
            self.read.append(name)
        return value

    def __iter__(self) -> Any:
        return iter(self._results)

    def __len__(self) -> int:
        return len(self._results)


class _Unfilled(dict):
    def __missing__(self, key: str) -> str:
        return "…"


SCALE_FIELDS = (  # what the paper states
    "dataset",
    "partition",
    "model",
    "image_size",
    "max_samples",
    "num_clients",
    "participation",
    "local_epochs",
    "rounds",
)
PARAMETERS = ("profile",)  # names in a notebook's results that are parameters, not results


def _declared_runs(experiment: Experiment, profile: str) -> list[tuple[dict[str, Any], ExperimentConfig]]:
    """An experiment's declared runs at ``profile`` on its first seed (no data is loaded, no fallback applied); none
    where it declares none."""
    try:
        seeds = experiment.seeds.get(profile) or [0]
        return dataclasses.replace(experiment, fallback=False).runs(profile, seeds=seeds[:1])
    except (ValueError, KeyError):
        return []


def _declared_setting(experiment: Experiment, profile: str) -> dict[str, tuple[str, ...]] | None:
    """The values of the experiment's :attr:`~Experiment.scale_fields` over its declared runs at ``profile``; None when
    the experiment declares no run there."""
    cfgs = [cfg for _, cfg in _declared_runs(experiment, profile)]
    fields = experiment.scale_fields
    return {f: tuple(sorted({str(getattr(c, f)) for c in cfgs}, key=_in_order)) for f in fields} if cfgs else None


def _in_order(value: str) -> tuple[int, float, str]:
    """Sort key of a field's values as text: numbers by value (5 before 10), then the rest by name."""
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, 0.0, value)


def _declared_arms(experiment: Experiment, profile: str) -> list[str]:
    """The labels of the arms ``experiment`` declares runs of at ``profile``, in order."""
    return list(dict.fromkeys(labels["label"] for labels, _ in _declared_runs(experiment, profile)))


_AS_IS = {"image_size": "native", "max_samples": "all"}  # what None means for these fields: the dataset as it is


def _shown(field_: str, values: tuple[str, ...]) -> str:
    return "/".join(_AS_IS.get(field_, v) if v == "None" else v for v in values)


def setting_stand_in(experiment: Experiment, profile: str) -> str:
    """Why ``experiment`` at ``profile`` is a stand-in for the paper's setting: each of its
    :attr:`~Experiment.scale_fields` (dataset, partition, model, image size, samples, clients, participation, local
    epochs, rounds, and the values of each field it sweeps) that differs from the declaration
    at the ``paper`` profile ('native' image size, 'all' samples where it takes the data as it is), or differs from
    what the paper states (:attr:`Experiment.paper_setting`: the paper's words; a field it does not state shows as not
    stated, beside the paper profile's choice); the arms run at the paper profile only are named; '' at the paper
    profile or where nothing differs. An experiment without runs at the paper profile lists the fields the paper's
    words are declared for, each beside ours."""
    if profile == "paper":
        return ""
    ours, paper = _declared_setting(experiment, profile), _declared_setting(experiment, "paper")
    if ours is None:
        return ""
    said = experiment.paper_setting
    if paper is None:  # no run at the paper profile: what the paper states is all there is to compare with
        if not said:
            return f"{experiment.name} at {profile}: the paper's setting is not declared (no run at the paper profile)"
        stated = [f"{f} {_shown(f, ours[f])} (paper: {said[f] or 'not stated'})" for f in experiment.scale_fields if f in said]
        return f"{experiment.name} at {profile}: {', '.join(stated)}"
    diff = [f for f in experiment.scale_fields if ours[f] != paper[f] or said.get(f) is not None]
    ran = set(_declared_arms(experiment, profile))
    left_out = [a for a in _declared_arms(experiment, "paper") if a not in ran]
    if not diff and not left_out:
        return ""

    def theirs(f: str) -> str:
        if f not in said:
            return f"paper: {_shown(f, paper[f])}"
        return f"paper: not stated; our paper profile: {_shown(f, paper[f])}" if said[f] is None else f"paper: {said[f]}"

    shown = ", ".join(
        [f"{f} {_shown(f, ours[f])} ({theirs(f)})" for f in diff]
        + ([f"arms run at the paper profile only: {'/'.join(left_out)}"] if left_out else [])
    )
    return f"{experiment.name} at {profile}: {shown}"


def experiment_chance(experiment: Experiment, profile: str) -> float:
    """Chance accuracy of ``experiment`` at ``profile``: 1 / the largest class count among its declared datasets there."""
    setting = _declared_setting(experiment, profile)
    datasets = setting["dataset"] if setting else (experiment.dataset,)
    return 1.0 / max(NUM_CLASSES.get(d, 10) for d in datasets)


def _floor(paper: Paper, spec: ClaimSpec, results: Mapping[str, Any]) -> R.Floor | None:
    """The floor of a claim: chance of the experiment it reads (a :class:`Derived` claim: the lowest chance among
    the experiments in ``results``, the most lenient) plus :data:`~pflnb.experiments.claims.FLOOR_MARGIN`; None when
    the paper claims the failure or no experiment is in ``results``."""
    if spec.failure_is_claim:
        return None
    if isinstance(spec, Compare | Best) and isinstance(results.get(spec.experiment), ExperimentResult):
        res = results[spec.experiment]
        return R.Floor(experiment_chance(res.experiment, res.profile))
    chances = [experiment_chance(r.experiment, r.profile) for r in results.values() if isinstance(r, ExperimentResult)]
    return R.Floor(min(chances)) if chances else None


def _stand_in(paper: Paper, spec: ClaimSpec, read: Sequence[str], results: Mapping[str, Any]) -> str:
    """Every reason a claim is a stand-in: its declared criterion (``spec.stand_in``) and the setting of each result it
    read (:func:`setting_stand_in`; :attr:`Paper.side` for results that are not engine experiments)."""
    reasons = [spec.stand_in] if spec.stand_in else []
    names = [spec.experiment, *read] if isinstance(spec, Compare | Best) else list(read)
    for name in dict.fromkeys(names):
        value = results.get(name)
        if isinstance(value, ExperimentResult):
            reasons.append(setting_stand_in(value.experiment, value.profile))
        elif name in paper.side:
            side = paper.side[name]
            if isinstance(side, View):
                profile = _profile_of(results)
                reasons.append(setting_stand_in(paper.experiment(side.experiment), profile) if profile else "")
            else:
                reasons.append(side)
        elif name not in PARAMETERS:
            raise ValueError(
                f"{paper.name}: the claim {spec.claim!r} reads {name!r}, which is neither an experiment nor declared in the "
                "paper's side results (Paper.side: '' for the paper's own setting, else why it is a stand-in)"
            )
    return "; ".join(dict.fromkeys(r for r in reasons if r))


def _profile_of(results: Mapping[str, Any]) -> str | None:
    """The profile the results were computed at: their ``profile`` parameter, else any experiment's."""
    if isinstance(results.get("profile"), str):
        return results["profile"]
    return next((r.profile for r in results.values() if isinstance(r, ExperimentResult)), None)


def robustness_path(root: str | Path | None = None) -> Path:
    """The committed table of ``make robustness``: each claim's verdict under the pinned and the perturbed kernels."""
    return (Path(root) if root is not None else R.figures_root()) / "robustness.csv"


def fragility(paper: str, root: str | Path | None = None) -> dict[str, tuple[str, str, str]]:
    """Claim text → ('fragile' (its verdict changed under the perturbed kernels) or 'stable', the pinned verdict
    category, the pinned numbers) for ``paper``, from the committed robustness table; empty without one. The mark
    applies while the claim is decided as it was then (:func:`~pflnb.experiments.claims.checks_now`)."""
    path = robustness_path(root)
    if not path.exists():
        return {}
    t = pd.read_csv(path, keep_default_na=False, dtype=str)
    t = t[t["paper"] == paper]
    rows = zip(t["claim"], t["fragile"], t["pinned"], t["pinned verdict"])
    return {c: (f, v, ours) for c, f, v, ours in rows if f in (R.FRAGILE, "stable")}


def decide(paper: Paper, results: Mapping[str, Any], extended: bool = True, only: Sequence[str] | None = None) -> list[Claim]:
    """The paper's declared claims decided on ``results`` (experiment name → :class:`ExperimentResult`, plus any
    named values a :class:`Derived` claim reads), in declaration order.

    Each claim gets: the tuning in its note (:meth:`ExperimentResult.tuning_note`: the compared arms of a
    :class:`Compare` or :class:`Best`, every tuned arm of each experiment a :class:`Derived` rule read); the floor for
    arms that did not train while its rule runs (:func:`_floor`: an arm below it makes the claim, or its part, not
    testable); its stand-in reasons derived from what it read (:func:`_stand_in`); who states it (``cite`` or
    ``ours``); the paper's effect beside ours and where it lies against our interval; and whether its verdict proved
    fragile under perturbed kernels (:func:`fragility`; not checked where the robustness table saw another decision).

    ``extended=False`` (the main scope): a claim that reads one of :attr:`Paper.extended`'s results, absent from
    ``results``, is **not run** (its text's placeholders shown as '…'). Any other missing result is an error, also
    an extended one when ``extended`` is True. ``only``: decide just the claims whose text starts with one of these
    (e.g. the claims run at the paper's own setting, whose results hold some experiments only); an unknown one is an
    error."""
    out = []
    fragile = fragility(paper.name)
    specs = paper.claims
    if isinstance(only, str):
        raise TypeError(f"only must be a sequence of claim texts, not the string {only!r}")
    if only is not None:
        unknown = [o for o in only if not any(spec.claim.startswith(o) for spec in paper.claims)]
        if unknown:
            raise ValueError(f"{paper.name} declares no claim starting with {unknown}")
        specs = tuple(spec for spec in paper.claims if spec.claim.startswith(tuple(only)))
    for spec in specs:
        reads = _Reads(results, () if extended else paper.extended)
        stated = dict(source=spec.source, cite=spec.cited(), wall_clock=spec.wall_clock)
        try:
            with R.floor(_floor(paper, spec, results)):
                decided = spec.decide(reads) if isinstance(spec, Derived) else spec.outcome(reads)
        except _Skipped:
            text, note = spec.claim.format_map(_Unfilled()), spec.note.format_map(_Unfilled())
            out.append(Claim(text, spec.paper, R.not_run(EXTENDED_RUN), note=note, stand_in=spec.stand_in, **stated))
            continue
        outcome, seeds = decided[:2]
        fill = decided[2] if len(decided) > 2 else {}
        text, note = (spec.claim.format(**fill), spec.note.format(**fill)) if fill else (spec.claim, spec.note)
        if isinstance(spec, Compare | Best):
            arms = (spec.arm, spec.other) if isinstance(spec, Compare) else (spec.arm, *spec.others)
            tuned = [_result(results, spec.experiment).tuning_note(arms)]
        else:
            tuned = [
                r.tuning_note(list(dict.fromkeys([*r.tuning["label"], *(r.experiment.tune.shared if r.experiment.tune else ())])))
                for r in (results[name] for name in reads.read)
                if isinstance(r, ExperimentResult) and r.tuning is not None and not r.tuning.empty
            ]
        note = "; ".join(n for n in (note, *tuned) if n)
        outcome = R.confounded(_with_collapsed(paper, spec, results, outcome), spec.confound)
        effect, where = R.effect_text(spec.effect, outcome)
        mark, pinned, pinned_ours = fragile.get(text, ("", "", ""))
        checked = mark and R.checks_now(pinned, pinned_ours, outcome.verdict, outcome.ours, spec.wall_clock)
        out.append(
            Claim(
                text,
                spec.paper,
                outcome,
                note=note,
                seeds=seeds,
                stand_in=_stand_in(paper, spec, reads.read, results),
                paper_effect=effect,
                effect_vs_ours=where,
                fragile=mark if checked else "",
                reads=[name for name in reads.read if isinstance(results[name], ExperimentResult)],
                **stated,
            )
        )
    return out


def _with_collapsed(paper: Paper, spec: ClaimSpec, results: Mapping[str, Any], outcome: Outcome) -> Outcome:
    """``outcome`` with its compared arms' collapsed verdict runs named in ``ours`` (a :class:`Compare` or
    :class:`Best` claim: the runs stay in the interval, but a seed that fell to chance is reported as such, never
    averaged in silently); unchanged when none collapsed, for other claims, or where no floor applies."""
    rule = _floor(paper, spec, results)
    if rule is None or not isinstance(spec, Compare | Best) or not isinstance(results.get(spec.experiment), ExperimentResult):
        return outcome
    arms = (spec.arm, spec.other) if isinstance(spec, Compare) else (spec.arm, *spec.others)
    gone = results[spec.experiment].collapsed(arms, rule.points / 100, **spec.where)
    if not gone:
        return outcome
    return dataclasses.replace(outcome, ours=f"{outcome.ours}; collapsed verdict seed(s): {'; '.join(gone)}")


def coverage_table(paper: Paper, claims: Sequence[Claim]) -> pd.DataFrame:
    """One row per item of ``paper.coverage``: the item, what it shows, its status, and the verdicts of the decided
    ``claims`` that test it (or the reason it is not tested)."""
    rows = []
    for item in paper.coverage:
        verdicts = []
        for text in item.claims:
            claim = next((c for c in claims if c.claim.startswith(text)), None)
            verdicts.append(f"{text}: {claim.label}" if claim is not None else f"{text}: (not decided)")
        rows.append(
            {
                "item": item.item,
                "shows": item.shows,
                "status": item.status,
                "ledger": " ‖ ".join(verdicts) if verdicts else "—",
                "reason": item.reason,
            }
        )
    return pd.DataFrame(rows, columns=["item", "shows", "status", "ledger", "reason"])


def write_coverage(paper: Paper, claims: Sequence[Claim], path: str | Path) -> pd.DataFrame:
    """:func:`coverage_table` written to ``path`` (CSV) and returned."""
    table = coverage_table(paper, claims)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False)
    return table
