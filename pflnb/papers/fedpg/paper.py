"""FedPG declared in the one shape (:mod:`pflnb.experiments.paper`): its experiments, gathered with its claims
(:mod:`~pflnb.papers.fedpg.ledger`) and its coverage (:mod:`~pflnb.papers.fedpg.coverage`) into :data:`PAPER`.

Settings per profile over the profile table's Fashion-MNIST row (see the notebook for why): the paper's Table 1
setting (Dir(0.1), 100 clients, 10 % online, B = 50, E = 5, lr × 0.999 per round, 2000 rounds) at the ``paper``
profile, fewer rounds, images and pixels below it. The paper tunes every method's learning rate on {0.01, 0.05, 0.1}
("we choose the best performance of each method") and states none of the chosen values: every arm of Table 1, the
ablations and App. B.1 is tuned on the same grid (:data:`TUNE`, on validation accuracy at a tuning seed); FedPG's
declared η = 0.1 (:data:`ETA`) runs where nothing is tuned (the smoke profile, and Fig. 5, whose FedPG′ and FedPG (5η)
arms are η/5 and 5η). Every run of Table 1, the ablations and Fig. 5 uses the same seeds, so claims pair runs by seed.

Each claim cites where the paper states it (``cite``) or says why it is our check (``ours``); the paper's effect (A − B
in points, from its tables) sits beside ours (``effect``); the sizes of its words ("much", "markedly", "a little",
"maintain") are the constants of :mod:`pflnb.papers.fedpg.claims`.
"""

from __future__ import annotations

from dataclasses import replace

from pflnb.experiments.config import PROFILES, ExperimentConfig
from pflnb.experiments.paper import SGD_LRS, Arm, Experiment, Paper, Setting, lr_tuning, setting_stand_in
from pflnb.papers.fedpg import claims as C
from pflnb.papers.fedpg.coverage import COVERAGE
from pflnb.papers.fedpg.experiments import FRESH_LABELS, S_ACC, PModelJob
from pflnb.papers.fedpg.ledger import CLAIMS

ETA = 0.1  # FedPG's declared η where nothing is tuned (ours: the paper states only its grid); the baselines keep 0.05
FIG5_LR_FACTOR = 5  # FedPG′ runs FedPG with η/5 ("a lower learning rate"); the probe "FedPG (5η)" with 5η
# Every arm of a comparative claim gets the same learning-rate grid, chosen on validation accuracy at a tuning seed.
TUNE = lr_tuning(SGD_LRS, paper="η ∈ {0.01, 0.05, 0.1}, the best of each method; the chosen values are not stated")
SEEDS = {"smoke": [0], "cpu": [0, 1, 2, 3, 4], "paper": [0, 1, 2, 3, 4]}
# Sizes of the theory sections (not engine runs): random instances per (m, D) cell (Theory 2), rounds of the convex
# toy (Theory 4).
THEORY = {
    "smoke": dict(trials=10, rounds_convex=30),
    "cpu": dict(trials=100, rounds_convex=300),
    "paper": dict(trials=200, rounds_convex=2000),
}

# Table 1 setting, over the profile table's Fashion-MNIST row. At the paper profile: the paper's scale (the paper's
# NFResNet-18 for CIFAR-100 is not in pflnb: the CIFAR CNN stands in, see the notebook).
_PAPER = dict(batch_size=50, local_epochs=5, rounds=2000, lr_decay=0.999, fractions=(0.7, 0.1, 0.2), eval_every=100)
TABLE1 = {
    "smoke": dict(
        alpha=0.1,
        num_clients=20,
        participation=0.25,
        batch_size=50,
        rounds=3,
        lr_decay=0.999,
        max_samples=1200,
        image_size=14,
        model="mlp2",
        eval_every=3,
    ),
    "cpu": dict(
        alpha=0.1,
        num_clients=100,
        participation=0.1,
        batch_size=50,
        local_epochs=5,
        rounds=40,
        lr_decay=0.999,
        max_samples=12000,
        image_size=14,
        model="mlp2",
        eval_every=40,
    ),
    ("paper", "fmnist"): dict(_PAPER, model="mlp2"),
    ("paper", "cifar10"): dict(_PAPER, model="cifar-cnn"),
    ("paper", "cifar100"): dict(_PAPER, model="cifar-cnn"),
}
# Fig. 5: Pat-2 (2 classes per client), every client online each round, over the Table 1 setting.
PAT2 = dict(partition="pathological", classes_per_client=2)
_PAT2 = dict(PAT2, participation=1.0)
_FIG5 = {
    "smoke": dict(num_clients=10, rounds=3, eval_every=1),
    # 20 clients (each class on 4 clients), 3000 images (90 train / 30 test images per client), 30 rounds, an
    # evaluation every round
    "cpu": dict(num_clients=20, max_samples=3000, rounds=30, eval_every=1),
    # the paper's scale: 100 clients all online (each class on 20 clients), 2000 rounds, the whole dataset
    "paper": dict(num_clients=100, rounds=2000, eval_every=20),
}
# every key of TABLE1 (a profile or a (profile, dataset) pair) with Pat-2 and the profile's Fig. 5 sizes
FIG5 = {key: {**fields, **_PAT2, **_FIG5[key if isinstance(key, str) else key[0]]} for key, fields in TABLE1.items()}

# CNN analogues of the CIFAR-10 items (Table 1, Fig. 5(b), Table 2): CIFAR-10 cannot be downloaded here, so below the
# paper profile the same settings run a small CNN (the CIFAR CNN's layout at a quarter of its widths) on digits5-lite
# (colour digits of five styles, 10 classes, all 1797 images at 16×16 pooled: 20 clients instead of 100, each class of
# Dir(0.1) on a few clients). At the paper profile they are the paper's CIFAR-10 runs (the CIFAR CNN).
_CNN = {
    "smoke": dict(model="small-cnn", max_samples=None, image_size=8, num_clients=10),
    "cpu": dict(model="small-cnn", max_samples=None, image_size=16, num_clients=20),
}
# Rounds of the CNN analogues at the cpu profile (the data is small, the CNN needs more steps than the MLP's 40):
# Table 1 and the ablations 200 (2 of 20 clients online: each client about 20 times); Fig. 5 the MLP's 30 rounds with
# 10 clients all online (each class on 2 clients), to bound its cost (every client trains every round).
_CNN_CPU = {"table1": dict(rounds=200, eval_every=200), "fig5": dict(rounds=30, eval_every=1, num_clients=10)}
CNN_DATASETS = {"smoke": "digits5-lite", "cpu": "digits5-lite", "paper": "cifar10"}


def cnn_analogue(fields: dict, cpu: dict | None = None) -> dict:
    """The CNN analogue of a setting declared per profile (:data:`TABLE1`, :data:`FIG5`): below the paper profile its
    fields (Dir(0.1) unless they name a partition) with the small CNN on digits5-lite, at it the paper's CIFAR-10
    fields (over the Fashion-MNIST row: Dir(0.1), 100 clients, 10 % online); ``cpu``: fields of the cpu profile's."""
    at = {"cpu": cpu or {}}
    return {
        **{p: {"partition": "dirichlet", **fields[p], **sizes, **at.get(p, {})} for p, sizes in _CNN.items()},
        ("paper", "cifar10"): fields[("paper", "cifar10")],
    }


FEDPG = Arm("FedPG", "fedpg", fields={"lr": ETA})
S_FEDPG = Arm("S-FedPG", "s-fedpg", fields={"lr": ETA})
FEDAVG_FT = Arm("FedAvg-FT", "fedavg-ft", {"ft_epochs": 1})
DITTO, FEDREP = Arm("Ditto", "ditto"), Arm("FedRep", "fedrep")


TABLE1_ARMS = (
    Arm("Local", "local"),
    FEDAVG_FT,
    DITTO,
    FEDREP,
    Arm("FedMGDA+", "fedmgda+"),
    FEDPG,
    S_FEDPG,
    Arm("FedProx", "fedprox"),
    Arm("APFL", "apfl"),
    Arm("pFedMe", "pfedme", {"inner_steps": 5}),
)
PAPER_ONLY = {"APFL": ("paper",), "pFedMe": ("paper",)}  # arms run only at the paper profile
# The paper states 2000 rounds for Table 1 and Fig. 4 only; Table 2, Fig. 5 and App. B.1 state none (paper_setting)
ROUNDS_UNSTATED = {"rounds": None}
ABLATION_ARMS = (
    Arm("M1 (d = d_r)", "fedpg", {"direction": "fedsgd"}, {"lr": ETA}),
    Arm("M2 (no F)", "fedpg", {"fair": False}, {"lr": ETA}),
    Arm("M4 (no stale)", "fedpg", {"stale": False}, {"lr": ETA}),
)
# The mechanism pairs (C.M2_PAIRED, C.M1_PAIRED): M2 and M1 at FedPG's tuned η, each differing from FedPG by its
# intervention alone (the objective bias, the conflicts)
PAIRED_ARMS = (
    Arm(C.M1_PAIRED, "fedpg", {"direction": "fedsgd"}, {"lr": ETA}),
    Arm(C.M2_PAIRED, "fedpg", {"fair": False}, {"lr": ETA}),
)
ABLATION_TUNE = replace(TUNE, shared={C.M1_PAIRED: FEDPG.label, C.M2_PAIRED: FEDPG.label})
FIG5_ARMS = (
    FEDPG,
    Arm("FedPG′ (η/5)", "fedpg", fields={"lr": ETA / FIG5_LR_FACTOR}),
    Arm("FedPG (5η)", "fedpg", fields={"lr": ETA * FIG5_LR_FACTOR}),
    S_FEDPG,
    FEDAVG_FT,
    DITTO,
    FEDREP,
)
# Fig. 5's comparison with the PFL baselines ('much faster and higher'): every arm at its own tuned learning rate
FIG5_COMPARE_ARMS = (FEDPG, S_FEDPG, FEDAVG_FT, DITTO, FEDREP)
FIG5_EXPERIMENT = Experiment(
    "fig5",
    "Fig. 5 analogue: S-acc(½) of the P-models every round, Pat-2, every client online (the S_ACC protocol)",
    "fmnist",
    FIG5_ARMS,
    SEEDS,
    FIG5,
    protocol=S_ACC,
    fallback=True,
    paper_setting=ROUNDS_UNSTATED,
)
FIG5_CNN_EXPERIMENT = Experiment(
    "fig5_cnn",
    "Fig. 5(b) CNN analogue: S-acc(½) of the P-models every round, Pat-2, every client online, the small CNN on "
    "digits5-lite, 10 clients at the cpu profile (without the FedPG (5η) probe)",
    "fmnist",
    tuple(a for a in FIG5_ARMS if a.label != "FedPG (5η)"),
    SEEDS,
    cnn_analogue(FIG5, _CNN_CPU["fig5"]),
    protocol=S_ACC,
    datasets=CNN_DATASETS,
    paper_setting=ROUNDS_UNSTATED,
)


def tuned_for_comparison(experiment: Experiment, name: str, doc: str) -> Experiment:
    """``experiment``'s setting, protocol and seeds with :data:`FIG5_COMPARE_ARMS`, each arm tuned (:data:`TUNE`)."""
    return replace(experiment, name=name, doc=doc, arms=FIG5_COMPARE_ARMS, tune=TUNE)


# App. B.1's scenarios over the Table 1 setting: Pat-2 at 10 % online, and Dir(0.1) at 50 % and 100 % online
# (compute bound on 2 shared cores: FedAvg-FT only where 10 % are online, FedPG in every scenario)
SCENARIOS = (
    Setting("Pat-2", PAT2, arms=("FedAvg-FT", "FedPG")),
    Setting("50 % online", {"participation": 0.5}, arms=("FedPG",)),
    Setting("100 % online", {"participation": 1.0}, arms=("FedPG",)),
)


def pmodel_job(cfg: ExperimentConfig, arm: Arm) -> PModelJob:
    """A Table 1 or ablation run: the engine run and the P-model scores of its final states (protocol P2 as well for
    :data:`~pflnb.papers.fedpg.experiments.FRESH_LABELS`)."""
    return PModelJob(cfg, arm.label in FRESH_LABELS)


EXPERIMENTS = (
    Experiment(
        "table1",
        "Table 1 analogue: P-model L/S/G-acc and GM of every method, Dir(0.1), 10 % online "
        "(APFL and pFedMe only at the paper profile; FedProx, the paper's best baseline in G-acc, at every profile)",
        "fmnist",
        TABLE1_ARMS,
        SEEDS,
        TABLE1,
        fallback=True,
        job=pmodel_job,
        only=PAPER_ONLY,
        tune=TUNE,
    ),
    Experiment(
        "ablations",
        "Table 2 analogue: FedPG without the QP direction (M1), the fair objective (M2), stale gradients (M4), in the "
        "Table 1 setting, beside FedPG itself (Table 1's runs); M1 and M2 also at FedPG's tuned η (the mechanism "
        "pairs); M3 (γ_i = 0) and the user γ re-personalise the Table 1 FedPG runs (protocol P2)",
        "fmnist",
        (FEDPG, *ABLATION_ARMS, *PAIRED_ARMS),
        SEEDS,
        TABLE1,
        fallback=True,
        job=pmodel_job,
        tune=ABLATION_TUNE,
        paper_setting={**ROUNDS_UNSTATED, "partition": "Pat-2"},
    ),
    FIG5_EXPERIMENT,
    tuned_for_comparison(
        FIG5_EXPERIMENT,
        "fig5_tuned",
        "Fig. 5 analogue for the comparison with the PFL baselines: the fig5 setting and protocol with FedPG, S-FedPG, "
        "FedAvg-FT, Ditto and FedRep each at its learning rate tuned on validation (the fig5 runs keep FedPG's fixed η and "
        "the baselines' 0.05 for the oscillation rows)",
    ),
    Experiment(
        "table1_cnn",
        f"Table 1 (CIFAR-10) CNN analogue: the Table 1 comparison with a small CNN on digits5-lite, Dir(0.1), 20 clients, "
        f"10 % online, {_CNN_CPU['table1']['rounds']} rounds at the cpu profile (CIFAR-10 and the CIFAR CNN at the "
        "paper profile)",
        "fmnist",
        TABLE1_ARMS,
        SEEDS,
        cnn_analogue(TABLE1, _CNN_CPU["table1"]),
        job=pmodel_job,
        only=PAPER_ONLY,
        datasets=CNN_DATASETS,
        tune=TUNE,
    ),
    Experiment(
        "ablations_cnn",
        "Table 2 (CIFAR-10) CNN analogue: FedPG and M1, M2, M4 on Pat-2 (the paper's Table 2 setting), 10 % online, "
        "the small CNN on digits5-lite; M1 also at FedPG's tuned η (the conflicts pair); M3 is FedPG's P2 "
        "re-personalisation with γ_i = 0",
        "fmnist",
        (FEDPG, *ABLATION_ARMS, PAIRED_ARMS[0]),
        SEEDS,
        cnn_analogue({k: {**v, **PAT2} for k, v in TABLE1.items()}, _CNN_CPU["table1"]),
        job=pmodel_job,
        datasets=CNN_DATASETS,
        tune=replace(TUNE, shared={C.M1_PAIRED: FEDPG.label}),
        paper_setting=ROUNDS_UNSTATED,
    ),
    FIG5_CNN_EXPERIMENT,
    tuned_for_comparison(
        FIG5_CNN_EXPERIMENT,
        "fig5_cnn_tuned",
        "Fig. 5(b) CNN analogue for the comparison with the PFL baselines: the fig5_cnn setting with FedPG, S-FedPG, "
        "FedAvg-FT, Ditto and FedRep each at its learning rate tuned on validation",
    ),
    Experiment(
        "table1_scenarios",
        "App. B.1 analogue: the Table 1 setting (Fashion-MNIST, MLP) under Pat-2 (FedPG and FedAvg-FT) and with 50 % "
        "and 100 % of the clients online (FedPG)",
        "fmnist",
        (FEDAVG_FT, FEDPG),
        SEEDS,
        TABLE1,
        fallback=True,
        job=pmodel_job,
        settings=dict.fromkeys(PROFILES, SCENARIOS),
        tune=TUNE,
        paper_setting=ROUNDS_UNSTATED,
    ),
)


# The results the claims read that are not engine experiments: the theory sections' numbers (exact checks of the paper's
# formulas; the claims on the convex toy say so in their own stand-in), and the Fig. 5 curve statistics, views of the
# fig5 and fig5_cnn runs, whose stand-in is their experiment's at each profile (none at the paper profile).
def _experiment(name: str) -> Experiment:
    return next(e for e in EXPERIMENTS if e.name == name)


def _curves_stand_in(name: str) -> dict[str, str]:
    """The stand-in of experiment ``name``'s curve statistics at each profile ('' at the paper profile)."""
    reasons = {p: setting_stand_in(_experiment(name), p) for p in PROFILES}
    return {p: reason and f"below the paper profile: {reason}" for p, reason in reasons.items()}


SIDE = {"theory": "", "fig5_stats": _curves_stand_in("fig5"), "fig5_cnn_stats": _curves_stand_in("fig5_cnn")}
# Results only the full reproduction computes (make reproduce-all): the sweeps and analogues added for coverage
PAPER = Paper(
    "fedpg",
    "FedPG (Preserving Global Performance in Personalized Federated Learning; anonymous ICCV submission)",
    EXPERIMENTS,
    CLAIMS,
    COVERAGE,
    extended=("table1_cnn", "ablations_cnn", "fig5_cnn", "fig5_cnn_stats", "fig5_cnn_tuned", "table1_scenarios"),
    side=SIDE,
)
