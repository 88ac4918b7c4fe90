"""How a paper's experiments are declared, as data: :class:`Experiment` (dataset, arms, seeds, grid, per-profile
settings and tuning; :class:`Arm`, :class:`Setting`, :class:`Tune`), and what a declaration implies at a profile
without running it: its runs, its stand-in reasons against the paper's setting (:func:`setting_stand_in`), its chance
level (:func:`experiment_chance`); and the rule every tuning choice follows (:func:`tuning_score`,
:func:`excluded`, :func:`best_on_validation`, :data:`EDGE_STEPS`).

The claims a paper makes of these experiments: :mod:`pflnb.experiments.claimspec`; running and tuning them:
:mod:`pflnb.experiments.tuning` (what that gives: :mod:`pflnb.experiments.result`); deciding the claims:
:mod:`pflnb.experiments.deciding`; the public names of them all: :mod:`pflnb.experiments.paper`.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pflnb.algorithms.registry import get_algorithm_class
from pflnb.data.spec import NUM_CLASSES
from pflnb.experiments.config import PROFILES, ExperimentConfig, has_row, profile_config, with_available_data
from pflnb.experiments.jobs import EvalProtocol, Job, RunJob


@dataclass(frozen=True)
class Arm:
    """One compared configuration: its ``label``, a registered ``method``, the method's ``params`` (``at``: params of
    one profile, or of one ``(profile, dataset)`` pair, merged over them in that order) and config fields of this arm
    only (``fields``: a learning rate, ...)."""

    label: str
    method: str
    params: Mapping[str, Any] = field(default_factory=dict)
    fields: Mapping[str, Any] = field(default_factory=dict)
    at: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def params_at(self, profile: str, dataset: str | None = None) -> dict[str, Any]:
        """The method's parameters at ``profile`` (on ``dataset``)."""
        return {**self.params, **self.at.get(profile, {}), **self.at.get((profile, dataset), {})}  # type: ignore[call-overload]


@dataclass(frozen=True)
class Setting:
    """A named data setting of an experiment: config fields over the experiment's (a setting may change the
    dataset, e.g. to one the profile table has no row for), and the labels of the arms it runs (None: every arm).

    With a ``dataset``, the setting is a *cell* of a dataset × setting grid (pMixFed's datasets × federations): it
    starts from that dataset's config (:meth:`Experiment.base`), its runs are labelled with the ``dataset`` as well,
    and ``Experiment.runs(..., dataset=...)`` runs the cells on that dataset only."""

    name: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    arms: tuple[str, ...] | None = None
    dataset: str | None = None


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


EDGE_STEPS = 4  # the grid-edge rule's cap: at most this many steps beyond each edge of each tuned value


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
    the order declared (settings, then arms, then seeds), and the table gets a ``setting`` column (and a ``dataset``
    column for a setting on a dataset of its own, a cell); an experiment with settings has no grid.
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
        return self._base(profile, dataset or default, **overrides)

    def _base(self, profile: str, dataset: str, **overrides: Any) -> ExperimentConfig:
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r}; choose one of {PROFILES}")
        fields = self.fields.get((profile, dataset), self.fields.get(profile, {}))
        # a dataset the table lacks starts from the declared dataset's row, or from the defaults where that lacks one too
        row = next((d for d in (dataset, self.dataset) if has_row(profile, d)), None)
        start = ExperimentConfig(profile=profile, dataset=dataset) if row is None else profile_config(profile, row)
        cfg = start.replace(**fields).replace(dataset=dataset, **overrides)
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
        settings = self.settings[profile]
        if dataset is not None and any(s.dataset for s in settings):  # cells: those on ``dataset``
            settings = tuple(s for s in settings if s.dataset == dataset)
            if not settings:
                raise ValueError(f"experiment {self.name!r} runs no setting on {dataset!r} at profile {profile!r}")
        seeds = self.seeds_at(profile) if seeds is None else list(seeds)
        out, base = [], None
        for setting in settings:
            if setting.dataset is None:
                base = self.base(profile, dataset, **overrides) if base is None else base
                start, where = base, {"setting": setting.name}
            else:  # a cell: its dataset's config, and the dataset among its labels
                start, where = self._base(profile, setting.dataset, **overrides), {"dataset": setting.dataset}
                where["setting"] = setting.name
            at = start.replace(**dict(setting.fields))
            for arm in self.arms:
                if (setting.arms is None or arm.label in setting.arms) and profile in self.only.get(arm.label, PROFILES):
                    cell = {**where, "label": arm.label}
                    for seed in seeds:
                        cfg = arm_config(at, arm, arm.params_at(profile, setting.dataset), seed, choice, cell)
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
