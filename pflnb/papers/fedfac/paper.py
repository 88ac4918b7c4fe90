"""FedSplit / FedFac declared in the one shape (:mod:`pflnb.experiments.paper`): its engine experiments and its claims.

The benchmarks run on named data settings: Fashion-MNIST 14×14 with a narrow 2-conv + 2-FC net at the smoke and cpu
profiles (pathological S = 2 at smoke; Dirichlet π = 0.1 and 1.0 at cpu, 100 clients, 10 % participation), the
paper's CIFAR-10 (Dirichlet π) and CIFAR-100 (S classes per client) settings at the paper profile, with the package's
``cifar-cnn`` standing in for ResNet-18 / VGG-16; and digits5-lite (Digits5 at the paper profile) for feature shift.

FedFac's Λ, τ and κ are chosen on validation accuracy (Tables 4–6, :func:`pflnb.papers.fedfac.experiments.tune`):
the experiments are declared for given FedFac parameters (:func:`experiments`; :data:`PAPER` holds them at the
paper's defaults, :func:`tuned` at the chosen ones), which go under each FedFac arm's own parameters.

The benchmarks run on named data settings, each with its own arms (:class:`~pflnb.experiments.paper.Setting`). The
simulation study (:class:`~pflnb.papers.fedfac.experiments.SimJob`), Figs. 1–2 and the
§3 theory are not engine runs; they stay in :mod:`pflnb.papers.fedfac.experiments`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pflnb.experiments.config import PROFILES, ExperimentConfig
from pflnb.experiments.paper import (
    ADAM_LRS,
    SCALE_FIELDS,
    TUNING_SEED,
    Arm,
    Cite,
    Compare,
    Derived,
    Experiment,
    Item,
    Paper,
    Setting,
    lr_tuning,
)
from pflnb.experiments.paper import TUNING_SEEDS as SHARED_TUNING_SEEDS
from pflnb.papers.fedfac import claims as C
from pflnb.papers.fedfac.featuremaps import FeatureMapJob

# ---- configs: the second layer over the profile table ------------------------------------------------------------

_FEDFAC_NET = dict(model="fedfac-cnn", optimizer="adam", lr=1e-3, batch_size=32, local_epochs=1, finetune_epochs=5)
FMNIST_FIELDS: dict[str, dict[str, Any]] = {
    "smoke": dict(
        _FEDFAC_NET,
        image_size=14,
        fractions=(0.6, 0.2, 0.2),
        num_clients=10,
        participation=0.5,
        max_samples=600,
        rounds=2,
        eval_every=1,
        unseen_clients=2,
    ),
    "cpu": dict(
        _FEDFAC_NET,
        image_size=14,
        fractions=(0.6, 0.2, 0.2),
        num_clients=100,
        participation=0.1,
        max_samples=20000,
        min_samples=8,
        rounds=20,
        eval_every=5,
        unseen_clients=10,
    ),
    # the paper's CIFAR settings: 100 clients, 10 % participation, 80/20 train/test (validation cut from the train
    # part), Adam 1e-3, 5 local epochs, 10 held-out clients. CIFAR has no row in the profile table: these fields
    # replace every value of the Fashion-MNIST paper row (its α = 0.1 back to 0.5 for the CIFAR-100 settings).
    "paper": dict(
        num_clients=100,
        participation=0.1,
        fractions=(0.7, 0.1, 0.2),
        image_size=None,
        model="cifar-cnn",
        optimizer="adam",
        lr=1e-3,
        batch_size=32,
        local_epochs=5,
        rounds=200,
        eval_every=5,
        unseen_clients=10,
        alpha=0.5,
    ),
}
# feature shift: one client per domain, full participation, FedFac's net
DIGITS5_FIELDS: dict[str, dict[str, Any]] = {
    profile: dict(_FEDFAC_NET, partition="by-domain", num_clients=5, **sizes)
    for profile, sizes in {
        "smoke": dict(image_size=8, rounds=2, eval_every=1),
        "cpu": dict(image_size=16, rounds=30, eval_every=5),
        "paper": dict(image_size=28, rounds=100, eval_every=5),
    }.items()
}

SETTINGS: dict[str, dict[str, Any]] = {
    "patho(S=2)": dict(partition="pathological", classes_per_client=2),
    "Dir(0.1)": dict(partition="dirichlet", alpha=0.1),
    "Dir(1.0)": dict(partition="dirichlet", alpha=1.0),
    **{f"CIFAR10 Dir({pi})": dict(dataset="cifar10", partition="dirichlet", alpha=pi) for pi in (0.1, 0.5, 1.0)},
    **{f"CIFAR100 S={s}": dict(dataset="cifar100", partition="pathological", classes_per_client=s) for s in (5, 10, 30)},
}
CIFAR = [name for name in SETTINGS if name.startswith("CIFAR")]


def _settings(
    names: Mapping[str, Sequence[str]], arms: Mapping[str, tuple[str, ...]] | None = None
) -> dict[str, tuple[Setting, ...]]:
    """Per profile, the named settings (and, per setting, its arms)."""
    arms = arms or {}
    return {p: tuple(Setting(n, SETTINGS[n], arms.get(n)) for n in ns) for p, ns in names.items()}


# Every arm of a comparative claim gets the same learning-rate grid, chosen on validation accuracy at a tuning seed.
TUNE = lr_tuning(ADAM_LRS, paper="Adam, lr 1e-3 for every method")
SEEDS = {"smoke": [0], "cpu": [0, 1, 2, 3, 4], "paper": [0, 1, 2]}
# What the paper states where the paper profile's value is our choice (paper_setting of each Experiment): its models
# (Table 1: ResNet-18 on CIFAR-10, VGG-16 on CIFAR-100; pflnb runs the CIFAR CNN), local epochs tuned over {1, 5, 20}
# with the choice not reported (§5.1), and no number of rounds; it has no Digits experiment at all.
LOCAL_EPOCHS_STATED = "tuned over {1, 5, 20}, the choice not reported"
CIFAR_STATED = {"model": "ResNet-18 (CIFAR-10), VGG-16 (CIFAR-100)", "local_epochs": LOCAL_EPOCHS_STATED, "rounds": None}
CIFAR100_STATED = {**CIFAR_STATED, "model": "VGG-16"}  # Tables 4-6
FIG10_STATED = {**CIFAR_STATED, "model": "ResNet-18"}
NOT_IN_THE_PAPER = dict.fromkeys(SCALE_FIELDS, None)
# Λ, τ, κ: never verdict seeds; two at the cpu and paper profiles as everywhere (the smoke profile's one is a smoke test)
TUNING_SEEDS = {"smoke": [TUNING_SEED], "cpu": list(SHARED_TUNING_SEEDS), "paper": list(SHARED_TUNING_SEEDS)}
# the strongest skew first: the claims read Table 2's first setting as the strong and its last as the mild skew
TABLE2 = {"smoke": ["patho(S=2)"], "cpu": ["Dir(0.1)", "Dir(1.0)"], "paper": CIFAR}
SPLITS = {"smoke": ["patho(S=2)"], "cpu": ["Dir(0.1)"], "paper": ["CIFAR10 Dir(0.1)", "CIFAR100 S=10"]}  # official, Table 8
TUNING = {"smoke": ["patho(S=2)"], "cpu": ["Dir(0.1)"], "paper": ["CIFAR100 S=10"]}
FIG10 = {"smoke": ["patho(S=2)"], "cpu": ["Dir(0.1)"], "paper": ["CIFAR10 Dir(0.5)"]}  # the paper: CIFAR-10, π = 0.5

# ---- the arms ------------------------------------------------------------------------------------------------------

# The tuning start point (Tables 4–6): τ = median, κ = 0.85 (the paper's defaults), Λ = {2} = conv2 (16 channels)
# only until Λ is chosen on validation accuracy.
FEDFAC_DEFAULT: dict[str, Any] = dict(layers=(2,), q=0.5, threshold="quantile", kappa=0.85)
# The official code's default behaviour (github.com/ffair/FedFac): τ = mean of ν, the split layer's bias local.
OFFICIAL: dict[str, Any] = dict(threshold="mean", bias="local")
ROUNDS = {
    "fmnist": {p: f["rounds"] for p, f in FMNIST_FIELDS.items()},
    "digits5": {p: f["rounds"] for p, f in DIGITS5_FIELDS.items()},
}

BASELINES = (
    Arm("FedAvg", "fedavg"),
    Arm("FedProx", "fedprox", {"mu": 0.01}),
    Arm("FedPer", "fedper"),
    Arm("LG-FedAvg", "lg-fedavg"),
    Arm("FedRep", "fedrep"),
    Arm("Ditto", "ditto"),
    Arm("APFL", "apfl"),
    Arm("Local", "local"),
    Arm("FedEM", "fedem"),
)


def tau_params(q: float) -> dict[str, Any]:
    """FedFac parameters of τ as a quantile ``q`` of ν; q ≥ 1 is τ = +∞, run as the official ``threshold="given"``
    without a value (every element of Λ personal)."""
    return {"q": 1.0, "threshold": "given", "tau": None} if q >= 1.0 else {"q": float(q), "threshold": "quantile"}


def shown(knob: str, value: Any) -> str:
    """A tuning value as shown (and as its arm's label): Λ as a set, τ as a percentage or +∞, κ as a number."""
    if knob == "Λ":
        return f"{{{value}}}"
    if knob.startswith("τ"):
        return "+∞" if float(value) >= 1 else f"{100 * float(value):g} %"
    return f"{value:g}" if isinstance(value, float) else str(value)


# Tables 4–6: the knobs in the paper's order, each as (experiment, FedFac parameters of one value, values per profile)
KNOBS: dict[str, tuple[str, Callable[[Any], dict[str, Any]], dict[str, tuple[Any, ...]]]] = {
    "Λ": ("tune_layers", lambda v: {"layers": (v,)}, {"smoke": (1, 2), "cpu": (1, 2, 3, 4), "paper": (1, 2, 3, 4)}),
    "τ (quantile)": (  # 1.0 = τ = +∞ (threshold "given" without a value)
        "tune_tau",
        tau_params,
        {"smoke": (0.5, 1.0), "cpu": (0.25, 0.5, 0.75, 1.0), "paper": (0.25, 0.5, 0.75, 0.9, 0.95, 1.0)},
    ),
    "κ": ("tune_kappa", lambda v: {"kappa": v}, {"smoke": (0.85,), "cpu": (0.5, 0.85), "paper": (0.5, 0.75, 0.85, 0.9, 0.95)}),
}


def candidates(knob: str) -> dict[str, Any]:
    """The values of ``knob`` tried at any profile, by their arm's label, in the order tried."""
    values = sorted({v for vs in KNOBS[knob][2].values() for v in vs})
    return {shown(knob, v): v for v in values}


def dynamic(label: str, fedfac: Mapping[str, Any], rounds: Mapping[str, int], **own: Any) -> Arm:
    """Dynamic FedFac: the FedFac parameters ``fedfac`` under the arm's ``own``; the new-client Ensemble computed at the
    last round only (the one the notebook reads)."""
    return Arm(
        label,
        "fedfac",
        {**fedfac, "mode": "dynamic", "ensemble_unseen": True, **own},
        at={p: {"ensemble_from": r} for p, r in rounds.items()},
    )


# Tables 4–6 judged on the verdict seeds (apart from the tuning above, which chooses FedFac's parameters on seed
# TUNING_SEEDS): each knob swept at two skew levels or more, with the paper's protocol for its table: Λ at τ = 50 %,
# κ = 0.85 (Table 4); τ at the chosen Λ, κ = 0.85 (Table 5); κ at the chosen Λ and a finite τ, the median (Table 6
# uses the best τ, which at cpu is +∞, where κ decides nothing). The strongest skew first, as in TABLE2.
SWEEP_LEVELS = {
    "smoke": ["patho(S=2)"],
    "cpu": ["Dir(0.1)", "Dir(1.0)"],
    "paper": ["CIFAR100 S=5", "CIFAR100 S=10", "CIFAR100 S=30"],
}
SWEEP_SEEDS = SEEDS
SWEEPS: dict[str, tuple[str, dict[str, tuple[Any, ...]]]] = {  # knob → (experiment, values per profile)
    "Λ": ("sweep_layers", KNOBS["Λ"][2]),
    "τ (quantile)": (
        "sweep_tau",
        {"smoke": (0.5, 1.0), "cpu": (0.25, 0.5, 0.75, 0.9, 1.0), "paper": KNOBS["τ (quantile)"][2]["paper"]},
    ),
    "κ": ("sweep_kappa", {"smoke": (0.85,), "cpu": (0.5, 0.75, 0.85, 0.95), "paper": KNOBS["κ"][2]["paper"]}),
}


def sweep_base(knob: str, fedfac: Mapping[str, Any]) -> dict[str, Any]:
    """The FedFac parameters a sweep of ``knob`` starts from (the chosen ones ``fedfac``): Table 4's defaults for Λ,
    the chosen Λ at κ = 0.85 and τ = median for τ and κ."""
    return dict(FEDFAC_DEFAULT) if knob == "Λ" else {**FEDFAC_DEFAULT, "layers": tuple(fedfac["layers"])}


def knob_experiment(
    name: str,
    doc: str,
    knob: str,
    fedfac: Mapping[str, Any],
    values: Mapping[str, Sequence[Any]],
    seeds: Mapping[str, Sequence[int]],
    levels: Mapping[str, Sequence[str]],
) -> Experiment:
    """Dynamic FedFac on the parameters ``fedfac`` with ``knob`` at each of its ``values`` (per profile), on the named
    settings ``levels`` and the ``seeds`` (per profile): a tuning (Tables 4–6) or a sweep that judges them."""
    params = KNOBS[knob][1]
    return Experiment(
        name,
        doc,
        "fmnist",
        tuple(dynamic(label, fedfac, ROUNDS["fmnist"], **params(v)) for label, v in candidates(knob).items()),
        seeds,
        FMNIST_FIELDS,
        settings={
            p: tuple(Setting(s, SETTINGS[s], tuple(shown(knob, v) for v in values[p])) for s in levels[p]) for p in PROFILES
        },
        paper_setting=CIFAR100_STATED,
    )


def featuremap_job(cfg: ExperimentConfig, arm: Arm) -> FeatureMapJob:
    """Fig. 10: the FedFac run and its channels' maps against FedAvg's on the same config."""
    return FeatureMapJob(cfg)


def experiments(fedfac: Mapping[str, Any] = FEDFAC_DEFAULT) -> tuple[Experiment, ...]:
    """FedFac's engine experiments, its FedFac arms on the FedFac parameters ``fedfac`` (Λ, τ, κ)."""
    tune = tuple(
        knob_experiment(
            name,
            f"Tables 4–6: {knob} of dynamic FedFac chosen on validation accuracy (tuning seeds)",
            knob,
            fedfac,
            per_profile,
            TUNING_SEEDS,
            TUNING,
        )
        for knob, (name, _, per_profile) in KNOBS.items()
    )
    sweeps = tuple(
        knob_experiment(
            name,
            f"Tables 4–6 judged: {knob} of dynamic FedFac swept on the verdict seeds at several skew levels",
            knob,
            sweep_base(knob, fedfac),
            per_profile,
            SWEEP_SEEDS,
            SWEEP_LEVELS,
        )
        for knob, (name, per_profile) in SWEEPS.items()
    )
    table2_arms = (*BASELINES, Arm("FedFac static", "fedfac", {**fedfac, "mode": "static", "warm_clients": 10}))
    table2_arms += (dynamic("FedFac dynamic", fedfac, ROUNDS["fmnist"]),)
    budget = ("FedAvg", "FedPer", "LG-FedAvg", "FedRep", "Local", "FedEM", "FedFac dynamic")  # the personalized ones
    median = tau_params(0.5)
    return (
        *tune,
        *sweeps,
        Experiment(
            "table2",
            "Table 2: label skew, every method (at cpu, within budget: every personalized baseline at the strongest "
            "skew, FedAvg/FedPer/FedFac at the mildest)",
            "fmnist",
            table2_arms,
            SEEDS,
            FMNIST_FIELDS,
            settings=_settings(
                TABLE2, {"patho(S=2)": budget, "Dir(0.1)": budget, "Dir(1.0)": ("FedAvg", "FedPer", "FedFac dynamic")}
            ),
            tune=TUNE,
            paper_setting=CIFAR_STATED,
        ),
        Experiment(
            "official",
            "Dynamic FedFac as the package reads the paper and with the official code's defaults (same Λ and κ)",
            "fmnist",
            (
                dynamic("package (τ tuned, bias follows)", fedfac, ROUNDS["fmnist"]),
                dynamic("official (τ = mean ν, bias local)", fedfac, ROUNDS["fmnist"], **OFFICIAL, q=0.5),
            ),
            SEEDS,
            FMNIST_FIELDS,
            settings=_settings(SPLITS),
            tune=TUNE,
            paper_setting=CIFAR_STATED,
        ),
        Experiment(
            "ablation",
            "Table 8 at τ = median (the paper's): FA, masked shared / personalized group, random fixed / redrawn split",
            "fmnist",
            (
                dynamic("FA (dynamic)", fedfac, ROUNDS["fmnist"], **median),
                dynamic("mask shared", fedfac, ROUNDS["fmnist"], **median, mask="shared"),
                dynamic("mask personalized", fedfac, ROUNDS["fmnist"], **median, mask="personal"),
                dynamic("random fixed", fedfac, ROUNDS["fmnist"], **median, partition="random_fixed"),
                dynamic("random redrawn", fedfac, ROUNDS["fmnist"], **median, partition="random_redrawn"),
            ),
            SEEDS,
            FMNIST_FIELDS,
            settings=_settings(SPLITS),
            tune=TUNE,
            paper_setting=CIFAR_STATED,
        ),
        Experiment(
            "fig10",
            "Fig. 10: maps of the split conv layer (conv2, τ = 50 %, κ = 0.85) of dynamic FedFac against FedAvg's",
            "fmnist",
            (dynamic("FedFac conv2 split", FEDFAC_DEFAULT, ROUNDS["fmnist"]),),
            SEEDS,
            FMNIST_FIELDS,
            settings=_settings(FIG10),
            job=featuremap_job,
            paper_setting=FIG10_STATED,
        ),
        Experiment(
            "digits5",
            "Feature shift: one client per domain (MNIST, SVHN, USPS, SynthDigits, MNIST-M styles), full participation",
            "digits5-lite",
            (
                *(a for a in table2_arms[:-1] if a.label not in ("Ditto", "APFL")),
                dynamic("FedFac dynamic", fedfac, ROUNDS["digits5"]),
            ),
            SEEDS,
            DIGITS5_FIELDS,
            settings={
                "smoke": (Setting("digits5-lite", arms=("FedAvg", "FedPer", "Local", "FedFac dynamic")),),
                "cpu": (Setting("digits5-lite", arms=budget),),
                "paper": (Setting("Digits5", {"dataset": "digits5"}),),
            },
            tune=TUNE,
            paper_setting=NOT_IN_THE_PAPER,
        ),
    )


_TABLE2 = "§5.2, Table 2"
_SIGNIFICANTLY = "FedFac significantly outperforms all competing methods in almost all settings."
_NO_SIZE = "'significantly' with no test and no size in the paper: no margin"

CLAIMS = (
    Derived(
        "Non-IID data makes neurons client-specific (Fig. 1)",
        "heatmaps: neurons alike across clients (IID); some vary across clients (non-IID)",
        C.neurons_client_specific,
        "across-client CV of a neuron's mean activation; sklearn digits, 50 clients, MLP 64→200→10; seeds pair the splits",
        stand_in=C.STAND_IN_FIG1,
        cite=Cite(
            "§1, Fig. 1",
            "nearly all neurons perform similarly for all clients in the IID case. However, there exist neurons learning "
            "quite varied representations",
        ),
    ),
    Derived(
        "Per-neuron entropy: IID concentrated, non-IID spread/bimodal (Fig. 2)",
        "IID: most near or below zero; non-IID: two peaks, near zero and near two",
        C.entropy_spread,
        "entropy is scale-dependent, so the peaks' positions do not carry over; no clean peaks at 0 and 2; parts: the "
        "non-IID entropies spread wider (IQR) and reach higher (upper quartile, the paper's second peak)",
        stand_in=C.STAND_IN_FIG2,
        cite=Cite("§1, Fig. 2", "In the non-IID case, the entropy values have two peaks, one near zero and the other near two."),
    ),
    Derived(
        "λp ≥ λs (interlacing)",
        "asserted (§3.3)",
        C.interlacing,
        "Cauchy interlacing: exact for any data (a check of the formulas, not evidence for the method)",
        by_construction="Cauchy interlacing, exact for any data",
        cite=Cite("§3.3, after Definition 1", "it is easily to infer that λp ≥ λs"),
    ),
    Derived(
        "Thm 1: FedSplit converges faster than FedAvg, under its bound",
        "rate 1−(ρ1λs+ρ2λp)/2 vs FedAvg's 1−ρ′λs/2",
        C.theorem1,
        "part of the gain is structural (ρ2 = C·ρ1)",
        cite=Cite("§3.3, Theorem 1", "Therefore, FedSplit enjoys faster convergence rate than FedAvg."),
    ),
    Derived(
        "Thm 2 term grows with C at fixed N",
        "more clients ⇒ larger generalization error",
        C.theorem2,
        "vacuous (>1) at these sizes; square roots reconstructed",
        stand_in=C.STAND_IN_THM2,
        cite=Cite(
            "§3.3, after Theorem 2",
            "increasing the number of clients C or decreasing the number of local samples n on each client would lead to "
            "larger generalization error",
        ),
    ),
    Derived(
        "FA recovers the true split (simulation oracle)",
        "factor analysis can well recover the true decomposition (Fig. 6)",
        C.recovery,
        "converged least-squares fit at κ = 0.85; at κ = 0.5 it fails (reversed), which the paper does not claim (it "
        "names no κ for its simulation)",
        stand_in=C.STAND_IN_RECOVERY,
        cite=Cite(
            "Abstract; §4.3.2, Fig. 6", "using factor analysis can well recover the underlying shared/personalized decomposition"
        ),
    ),
    Derived(
        "FedFac ≈ true split in accuracy (Fig. 6)",
        "true, oracle, static and dynamic: nearly identical",
        C.matches_true_split,
        f"the oracle, static and dynamic FedFac each against true at p = 0.5, α = 0.4, one part each; equivalence margin "
        f"±{C.SIM_TOL:g} points (the paper gives no numbers; spec §3.6: about the sampling noise of 240 test points)",
        cite=Cite("§4.3.2, Fig. 6", "the first four decomposition methods can generate nearly identical results"),
    ),
    Derived(
        "Random decomposition much worse (Fig. 6)",
        "random decomposition much inferior",
        C.random_split_worse,
        f"'much inferior' as δ = {C.SIM_TOL:g} points, the equivalence margin the same sentence's 'nearly identical' gets; "
        "the paper's 'random guess' does not say whether the split is drawn once or every round: both are parts; a fixed "
        "random split is the true split's twin by construction (A18), so that part is shown, not decided",
        cite=Cite("§4.3.2, Fig. 6", "while the random decomposition is much inferior"),
    ),
    Derived(
        "Dynamic partition stabilizes (Fig. 7)",
        "nearly all neurons reach stable states",
        C.partition_stabilizes,
        f"stable fraction of the last 10 rounds against 1, equivalence margin ±{C.STABLE_TOL:g} points ('nearly all': ≥ "
        "0.9, spec §3.7; the paper gives no number); full participation, C = 20",
        cite=Cite(
            "§4.3.2, Fig. 7", "nearly all neurons will reach their final stable states during the model training procedure"
        ),
    ),
    Derived(
        "FedFac beats FedAvg under strong skew (Table 2)",
        "CIFAR-10 π=0.1: .8307 vs .8033",
        C.beats_fedavg,
        "{skew}; " + _NO_SIZE + "{fa}{fedavg}",
        cite=Cite(_TABLE2, _SIGNIFICANTLY),
        effect=2.74,
    ),
    Derived(
        "Gap to FedAvg shrinks with milder skew",
        "not stated; CIFAR-10 π=0.1: .8307 vs .8033, π=1: .7153 vs .6849 (no shrink)",
        C.gap_shrinks,
        "paired per seed: (FedFac − FedAvg) at {skew} minus at {mild}{fa}{fedavg}",
        ours="the paper does not say that the gap to FedAvg shrinks with milder skew (it calls FedFac 'robust to different "
        "levels of heterogeneity'), and its CIFAR-10 gaps do not shrink (+2.74 at π = 0.1, +3.04 at π = 1): the spec's "
        "expectation",
        effect=-0.30,
    ),
    Derived(
        "FedFac beats the personalized baselines (Table 2)",
        "outperforms all competitors in almost all settings",
        C.beats_personalized,
        "per setting, against the strongest on validation of the paper's personalized competitors that ran ({competitors}); "
        "'almost all settings': {k} of {n}; " + _NO_SIZE + "; the paper's margins over its strongest personalized "
        "competitor: +5.97 points at CIFAR-10 π = 0.1, +2.83 at π = 1{fa}",
        cite=Cite(_TABLE2, _SIGNIFICANTLY),
        effect={"Dir(0.1)": 5.97, "Dir(1.0)": 2.83},  # CIFAR-10 π = 0.1 and π = 1, which our two settings stand for
    ),
    Compare(
        "FedFac > FedAvg under feature shift (digits5-lite)",
        "not in the paper",
        "digits5",
        "FedFac dynamic",
        "FedAvg",
        names=("FedFac", "FedAvg"),
        note="5 clients = 5 domains, 30 rounds",
        untestable={"smoke": C.SMOKE},
        ours="the paper has no feature-shift (digits5) experiment; the nearest, FEMNIST's writers, is another setting",
    ),
    Derived(
        "FedFac beats the personalized baselines under feature shift (digits5-lite)",
        "not in the paper",
        C.beats_personalized_feature_shift,
        "against the strongest on validation of {personalized}{fa}",
        ours="the paper has no feature-shift (digits5) experiment",
    ),
    Derived(
        "FedFac improves on FedAvg for most clients (Fig. 8)",
        "improvement for most clients",
        C.most_clients_improve,
        "{settings}; per seed the share of the participating clients whose test accuracy (best mean-validation round) "
        "is above FedAvg's, ties not counted, against one half; one part per setting{fa}{fedavg}",
        cite=Cite("§5.2, Fig. 8", "FedFac has gained improvement in terms of the local accuracy for most clients"),
    ),
    Derived(
        "FedFac's across-client spread of accuracy is relatively small (Fig. 8)",
        "relatively small variance of client accuracies (fairness)",
        C.smallest_spread,
        "{settings}; sd over the participating clients of the test accuracy (best mean-validation round), below that of "
        "most (a strict majority) of the paper's competitors that ran; one part per setting{fa}{fedavg}",
        cite=Cite("§5.2, Fig. 8", "the FedFac method can achieve relatively small variance of client-side accuracies"),
    ),
    Derived(
        "The deepest hidden layer is the best Λ on validation (Table 4)",
        "Λ = {15} best for S = 5, 10, 30",
        C.deepest_layer_best,
        "Λ = {deepest} against the strongest shallower Λ on best mean-validation accuracy at τ = 50 %, κ = 0.85; one "
        "part per level ({levels})",
        cite=Cite("§5.3, Table 4", "the largest Λ results in the best test accuracy for different setups of"),
        effect={"CIFAR100 S=5": 43.08, "CIFAR100 S=10": 8.18, "CIFAR100 S=30": 3.75},  # over its best shallower Λ
    ),
    Derived(
        "The best τ rises with the skew (Table 5)",
        "95 % at S = 5, 10; 90 % at S = 30",
        C.tau_rises_with_skew,
        "per seed, the τ best on validation at {skew} minus at {mild} (τ = +∞ counted as 100 %), at the chosen Λ, κ = 0.85; "
        "the paper's effect: 95 − 90 quantile points (S = 5 against S = 30)",
        cite=Cite(
            "§5.3, Table 5", "Larger τl is more beneficial when data have higher level of heterogeneity among different clients"
        ),
        effect=5.0,
    ),
    Derived(
        "κ moves the accuracy no more than Table 6's own spread (Table 6)",
        "not stated; Table 6's spread over κ: up to .7136 − .6921",
        C.kappa_small_effect,
        f"each κ of {{kappas}} against κ = {C.KAPPA_REF} per seed (test accuracy), equivalence margin ±{C.KAPPA_TOL:g} "
        "points (Table 6's largest spread over κ, S = 5); at the chosen Λ and τ = 50 % (the best τ at cpu is +∞, where κ "
        "decides nothing); one part per level and κ",
        ours="the paper states no size for κ's effect; it ranks κ's influence last, after Λ and τ ('Λ has the largest "
        "influence on the classification performance of FedFac, which is followed by τl and κl'); the margin is Table "
        "6's own spread",
    ),
    Derived(
        "FedFac's training loss falls faster than FedAvg's (Fig. 9)",
        "faster in all datasets; nearly coincide for nearly IID data (π = 1)",
        C.loss_falls_faster,
        "mean loss of the last 5 rounds, lower is claimed; one part per setting but the nearly IID ones (Dir(1.0), the "
        "paper's π = 1: there the paper says the curves nearly coincide); 'much faster' has no size in the paper: no "
        "margin{fa}{fedavg}",
        stand_in=C.STAND_IN_FIG9,
        cite=Cite(
            "§5.4, Fig. 9", "we find the loss of FedFac goes down faster in all datasets with different heterogeneity settings"
        ),
    ),
    Derived(
        "New clients: Ensemble beats LocalTrain (Table 3)",
        "Ensemble > LocalTrain always",
        C.ensemble_beats_localtrain,
        "held-out clients; one part per setting ('always'); the paper: +2.97 points at CIFAR-10 π = 0.1, +1.26 at π = 1{fa}",
        cite=Cite("§5.2, Table 3", "the FedFac method with Ensemble always performs better than that with LocalTrain"),
        effect={"Dir(0.1)": 2.97, "Dir(1.0)": 1.26},  # CIFAR-10 π = 0.1 and π = 1
    ),
    Derived(
        "FedFac takes more time than FedAvg (Table 7)",
        "more time, from factor analysis; Table 7: 1.2147–3.3879× (FedFac, FEMNIST to CIFAR-100 S = 5)",
        C.training_time,
        "{setting}: FedAvg and FedFac alternated in one process, {n} repetitions of {rounds} rounds, one worker; per "
        "repetition the ratio of median per-round training times; wall-clock, so shown rounded; the repetitions in "
        "timing_paired.csv, every method's ratio and FA's share in timing.csv; the paper's words state the direction, "
        "so a ratio above 1 is the claim; its Table 7 ratios (ResNet-18/VGG-16 on its own hardware; the range leaves "
        "out CIFAR-10, whose FedFac column cannot be read) are a size that does not carry over to another model and "
        "machine{fa}",
        cite=Cite(
            "§5.4, Table 7", "FedFac indeed consumes more time than FedAvg because of the implementation of factor analysis"
        ),
        wall_clock=True,
    ),
    Derived(
        "Masking personalized hurts more than masking shared (Table 8A)",
        "in most settings, especially at high heterogeneity",
        C.masking,
        "{setting} (the strongest skew: one setting, so 'in most settings' is not tested), τ = median{cause}",
        cite=Cite(
            "§5.5, Table 8 Panel A",
            "in most settings especially the heterogeneity level is high, masking personalized parameters would lead to "
            "worse classification performance than masking the shared parameters",
        ),
        effect=9.29,
    ),
    Derived(
        "FA split beats a random split (Table 8B)",
        "always better than a random split (CIFAR-10 π=0.1: .8307 vs .8140)",
        C.fa_beats_random,
        "{setting}, τ = median; the paper's 'random split' does not say whether it is drawn once or every round: both are "
        "parts; the paper's gains are 0.39–3.07 points, below what 5 seeds here resolve",
        cite=Cite("§5.5, Table 8 Panel B", "FedFac can always achieve better performance than random split"),
        effect={"fixed": 1.67, "redrawn": 1.67},
    ),
    Derived(
        "FedFac's shared channels map like FedAvg's, its personalized ones differ (Fig. 10)",
        "shared ≈ FedAvg's; personalized cleaner, more specific",
        C.shared_like_fedavg,
        "{setting}, conv2 split at τ = 50 %, κ = 0.85 (the paper: a ResNet-18 conv layer, CIFAR-10 π = 0.5); correlation "
        "of each channel's map with FedAvg's same channel, every client's first 4 test images",
        stand_in=C.STAND_IN_FIG10,
        cite=Cite("§5.6, Fig. 10", "The shared filters in FedFac behave similarly with those in FedAvg."),
    ),
)

# Every result a claim reads that is not an engine experiment: '' in the paper's own setting, else why it is a stand-in
SIDE = {
    "motivation": "scikit-learn's digits (8×8) in 50 clients (each digit in 5 groups), an MLP 64→200→10 (the paper: "
    "MNIST in 100 clients, an MLP with 200 hidden units)",
    "kernels": "",  # λp ≥ λs is Cauchy interlacing: exact on the paper's formulas, for any data
    "thm1": "Theorem 1's two-layer model at width m1 = m2 = 2000 (the theorem: over-parameterized widths) on toy data, "
    "C = 5 clients of n = 10 points in d = 10; FedAvg's bound with ρ1 in place of the paper's ρ′",
    "thm2": "the bound's term on toy data (N = 120 points in d = 10, C = 2 to 40 clients)",
    "recovery": "",  # the paper's Eq. (8) DGP at its sizes (C = 100, d = 100, m = 200); the criterion is the stand-in
    "sim": "the Eq. (8) simulation at C = 20 clients (the paper: 100) of 100 samples, full participation, 25 rounds, "
    "labels centred per client (spec A17; the paper's rule gives nearly one class per client)",
    "stability": "the Eq. (8) simulation at C = 20 clients (the paper: 100), full participation, 25 rounds",
    "loss": "the training losses of the table2 runs (their setting)",
    "t3": "the held-out clients of the table2 runs (their setting)",
    "timing": "a few rounds of the table2 configs of its first setting and seed, timed in one process on this machine "
    "(the paper times whole runs of ResNet-18/VGG-16 on its own hardware)",
}

# Every numbered item of the paper, in the paper's order, and the ledger rows that test it (or why not). Not a numbered
# item but named as a gap: the FedEM baseline (its columns of Tables 2, 3 and 7).
_PAPER_ONLY = "runs at the paper profile only, not at this scale"
COVERAGE = (
    Item(
        "Figure 1",
        "heatmaps of each neuron's output per client: alike under IID, client-specific under non-IID data",
        ("Non-IID data makes neurons client-specific (Fig. 1)",),
    ),
    Item(
        "Figure 2",
        "per-neuron entropy across clients: IID concentrated near or below 0, non-IID bimodal (peaks near 0 and 2)",
        ("Per-neuron entropy: IID concentrated, non-IID spread/bimodal (Fig. 2)",),
        status="partly",
        reason="the row tests that the non-IID entropies spread wider (IQR) and reach higher (upper quartile); the "
        "two peaks near 0 and 2 (bimodality) are not tested as such",
    ),
    Item(
        "Figure 3",
        "shared and personalized neurons of a DNN under FedSplit",
        status="not testable",
        reason="an illustration of the split, no statement",
    ),
    Item(
        "Theorem 1",
        "FedSplit converges linearly at 1 − (ρ1λs + ρ2λp)/2, faster than FedAvg (using λp ≥ λs)",
        ("λp ≥ λs (interlacing)", "Thm 1: FedSplit converges faster than FedAvg, under its bound"),
    ),
    Item(
        "Theorem 2",
        "generalization bound sqrt(2 (C/n) yᵀ(H^s∞ + H^p∞)⁻¹ y) + O(·): at fixed N, more clients, a larger error",
        ("Thm 2 term grows with C at fixed N",),
        status="partly",
        reason="only the bound's data-dependent term is evaluated (its growth in C, a stand-in); the O(·) term has "
        "unspecified constants, and the trained network's test loss against C at fixed N is in no row (testable, "
        "not run)",
    ),
    Item(
        "Figure 4",
        "how each client's kernels are flattened and stacked into the factor-analysis input Z_l",
        status="not testable",
        reason="a data-layout diagram, no statement (the notebook draws Z for a small draw in fa_recovery)",
    ),
    Item("Figure 5", "the FedFac framework", status="not testable", reason="a pipeline diagram, no statement"),
    Item(
        "Figure 6",
        "simulation: the true, oracle, static and dynamic splits ≈ equally accurate, a random split much worse "
        "(p varied at α = 0.4, α varied at p = 0.5)",
        (
            "FA recovers the true split (simulation oracle)",
            "FedFac ≈ true split in accuracy (Fig. 6)",
            "Random decomposition much worse (Fig. 6)",
        ),
        status="partly",
        reason="the rows judge p = 0.5, α = 0.4 only (dynamic vs true, true vs random) and FA on the oracle's "
        "parameters; the static and oracle splits against the true one in accuracy, p ∈ {0.25, 0.75} (run, not "
        f"judged) and the α row (α ∈ {{0.2, 0.6}}: {_PAPER_ONLY}) are in no row",
    ),
    Item(
        "Figure 7",
        "share of neurons that keep their state between rounds under dynamic FedFac → ≈ 1",
        ("Dynamic partition stabilizes (Fig. 7)",),
    ),
    Item(
        "Table 1",
        "datasets, client and sample counts and models of the experiments",
        status="not testable",
        reason="a summary of the paper's datasets and models, no statement",
    ),
    Item(
        "Table 2",
        "test accuracy of every method on CIFAR-10 (π), CIFAR-100 (S), FEMNIST and Shakespeare: FedFac best almost "
        "everywhere, dynamic better than static",
        (
            "FedFac beats FedAvg under strong skew",
            "Gap to FedAvg shrinks with milder skew",
            "FedFac beats the personalized baselines (Table 2)",
            "FedFac > FedAvg under feature shift (digits5-lite)",
            "FedFac beats the personalized baselines under feature shift (digits5-lite)",
        ),
        status="partly",
        reason="Fashion-MNIST Dir(0.1)/Dir(1.0) and digits5-lite stand in for CIFAR and FEMNIST; dynamic better than "
        f"static and the FedProx column are in no row (FedFac static and FedProx: {_PAPER_ONLY}); the next-character "
        "task (Shakespeare, LSTM) has no dataset or model in the package; at cpu FedAvg does not train under Dir(0.1) "
        "(its rows there are not testable), and the tuned FedFac has τ = +∞, so its factor analysis decides nothing",
    ),
    Item(
        "FedEM baseline (Tables 2, 3, 7)",
        "FedEM's accuracy, new-client accuracy and training-time ratio against FedFac",
        ("FedFac beats the personalized baselines",),
        status="partly",
        reason="FedEM (Marfoq et al., 2021, M = 3 components) runs in Table 2's Dir(0.1) setting and on digits5-lite "
        "and counts among the personalized baselines; its new-client (Table 3) and training-time (Table 7) columns are "
        "in no row",
    ),
    Item(
        "Figure 8",
        "per-client accuracy: FedFac improves most clients and has a smaller spread across clients (fairness)",
        ("FedFac improves on FedAvg for most clients (Fig. 8)", "FedFac's across-client spread of accuracy"),
        status="partly",
        reason="the Table 2 runs (Fashion-MNIST Dir(0.1) and Dir(1.0)) stand in for the paper's datasets; at Dir(1.0) "
        "the cpu profile runs FedAvg and FedPer only, and FedProx and FedFac static run at the paper profile only; "
        "'improves' is read against FedAvg, the paper's global baseline",
    ),
    Item(
        "Table 3",
        "new clients on CIFAR-10: Ensemble above LocalTrain always; best at π = 0.5 and 1, ≈ FedAvg+/FedProx+ at π = 0.1",
        ("New clients: Ensemble beats LocalTrain (Table 3)",),
        status="partly",
        reason="Ensemble against the baselines (FedAvg, LG-FedAvg, FedRep as is and fine-tuned '+', computed in the "
        f"Table 3 analogue) is in no row; FedProx {_PAPER_ONLY}; FedEM's new clients are not evaluated",
    ),
    Item(
        "Table 4",
        "tuning Λ on CIFAR-100 (τ = 50 %, κ = 0.85): the deepest hidden layer is best for every S",
        ("The deepest hidden layer is the best Λ on validation (Table 4)",),
        status="partly",
        reason="judged at the paper profile only (CIFAR-100 S = 5, 10, 30, the package's cifar-cnn for VGG-16, its 4 "
        "layers for VGG-16's 15): the smaller profiles run the paper's FEMNIST-shaped net, for which the paper expects "
        "shallow layers to be preferable (the sweep sweep_layers is shown there, not judged)",
    ),
    Item(
        "Table 5",
        "tuning τ (Λ = {15}): the best τ is 95 % for S = 5, 10 and 90 % for S = 30 (more personal under more skew)",
        ("The best τ rises with the skew (Table 5)",),
        status="partly",
        reason="judged at cpu on Fashion-MNIST Dir(0.1) against Dir(1.0) (sweep_tau, seeds 0–4) over τ ∈ {25, 50, "
        "75, 90 %, +∞} (no 95 %; +∞ counted as 100 %), in place of CIFAR-100 S = 5, 10 against S = 30",
    ),
    Item(
        "Table 6",
        "tuning κ (Λ = {15}, best τ): κ changes the accuracy only slightly",
        ("κ moves the accuracy no more than Table 6's own spread (Table 6)",),
        status="partly",
        reason="the paper states no size for κ's effect (the row is our check, against Table 6's own spread); judged at "
        "cpu on Fashion-MNIST Dir(0.1) and Dir(1.0) (sweep_kappa, seeds 0–4) over κ ∈ {0.5, 0.75, 0.85, 0.95} (no 0.9) "
        "at τ = 50 %, not at the best τ: validation picks τ = +∞ at cpu, where κ decides nothing; that κ influences the "
        "accuracy less than Λ and τ (§5.3) is in no row",
    ),
    Item(
        "Figure 9",
        "training loss: FedFac falls faster and smoother than FedAvg, the gap grows with the skew",
        ("FedFac's training loss falls faster than FedAvg's (Fig. 9)",),
        status="partly",
        reason="judged per setting but the nearly IID ones (where the paper says the curves nearly coincide; that "
        "part is in no row), on the last rounds' mean loss; that the gap grows with the skew (paired across settings) "
        "and that the curve is smoother are in no row",
    ),
    Item(
        "Table 7",
        "training time relative to FedAvg: FedFac 1.21–3.39×, competitive with the other personalized methods, FedEM 4–12×",
        ("FedFac takes more time than FedAvg (Table 7)",),
        status="partly",
        reason="only FedFac's ratio to FedAvg is judged, from a paired timing of a few rounds (timing_paired.csv); the "
        "other methods' ratios (in timing.csv, from whole runs) are in no row",
    ),
    Item(
        "Table 8 (Panel A)",
        "masking the personalized group hurts more than masking the shared one, especially under high skew",
        ("Masking personalized hurts more than masking shared (Table 8A)",),
        status="partly",
        reason="run at the strongest skew only (Dir(0.1)); 'especially under high skew' needs the ablation at a "
        "milder setting too (e.g. Dir(1.0))",
    ),
    Item(
        "Table 8 (Panel B)",
        "the FA split beats a random split of the same size in every setting (by 0.39–3.07 points)",
        ("FA split beats a random split (Table 8B)",),
        status="partly",
        reason="run at the strongest skew only (Dir(0.1)); 'in every setting' needs the ablation at further settings "
        "(e.g. Dir(1.0))",
    ),
    Item(
        "Figure 10",
        "feature maps of one image from a split conv layer: FedFac's personalized filters cleaner and more specific "
        "than FedAvg's, its shared ones like FedAvg's",
        ("FedFac's shared channels map like FedAvg's, its personalized ones differ (Fig. 10)",),
        status="partly",
        reason="a stand-in measure (the correlation of each channel's map with FedAvg's same channel, shared against "
        "personalized) on Fashion-MNIST Dir(0.1) and the small net's conv2; that the personalized maps are cleaner "
        "and more specific is shown (fig10_feature_maps), not judged",
    ),
    Item(
        "Supplementary Materials B–C",
        "proofs of Theorems 1–2",
        status="not testable",
        reason="proofs, not in the paper's text here; their statements are checked under Theorems 1–2",
    ),
)

TITLE = "FedSplit / FedFac (Wang, Tang & Li, arXiv:2312.04281)"
# Results only the full reproduction computes (make reproduce-all): the sweeps and analogues added for coverage
PAPER = Paper("fedfac", TITLE, experiments(), CLAIMS, COVERAGE, extended=("sweep_layers", "sweep_tau", "sweep_kappa"), side=SIDE)


def tuned(fedfac: Mapping[str, Any]) -> Paper:
    """:data:`PAPER` with its FedFac arms on the FedFac parameters ``fedfac`` (chosen on validation accuracy)."""
    return dataclasses.replace(PAPER, experiments=experiments(fedfac))
