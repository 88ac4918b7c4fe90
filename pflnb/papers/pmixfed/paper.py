"""pMixFed declared in the one shape (:mod:`pflnb.experiments.paper`): its experiments, gathered with its claims
(:mod:`~pflnb.papers.pmixfed.ledger`) and its coverage (:mod:`~pflnb.papers.pmixfed.coverage`) into :data:`PAPER`.

The paper's training recipe (§5.1, App. C) is every run's: Adam, lr 1e-3, batch 32, r = 2 local epochs, 2
fine-tuning epochs for unseen clients, Dirichlet γ = 0.1, N = 10 clients all taking part or N = 100 with C = 0.1,
100 rounds. The reduced profiles keep the recipe and shrink data, images and rounds (the notebook says why).

pMixFed's settings are (dataset, federation) *cells*, declared in :mod:`pflnb.papers.pmixfed.cells`; each experiment runs
its cells as settings of the shared shape (:func:`~pflnb.papers.pmixfed.cells.cell_settings`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pflnb.experiments.paper import ADAM_LRS, Arm, Experiment, Paper, lr_tuning
from pflnb.papers.pmixfed import claims as C
from pflnb.papers.pmixfed.cells import (
    DIGITS,
    FIRST,
    RECIPES,
    TABLE1_CELLS,
    TABLE2_MLP15_ARMS,
    TABLE2_MLP15_CELLS,
    cell_rounds,
    cell_settings,
)
from pflnb.papers.pmixfed.coverage import COVERAGE
from pflnb.papers.pmixfed.experiments import MISMATCHED
from pflnb.papers.pmixfed.ledger import CLAIMS

# The paper's horizon T of the round fraction t/T in Eq. 6 (its runs have T = 100 rounds). Every profile uses it,
# so a run of R < 100 rounds follows the first R rounds of the paper's μ schedule (t/T from 0.01 to R/100) rather
# than a schedule compressed into R rounds (where t/T reaches 0.1 in round 1 at R = 10 and μ is near-binary from the
# start; Fig. 5's "compressed" arm runs that).
PAPER_HORIZON = 100
# μ is driven by the clients' validation accuracy in every reported run; ``acc_split="test"`` (the paper's §5.4.2
# rule) is a switch of the algorithm that no reported number uses.
PMIX = {"horizon": PAPER_HORIZON, "acc_split": "val"}

# Every arm of a comparative claim gets the same learning-rate grid, chosen on validation accuracy at a tuning seed.
TUNE = lr_tuning(ADAM_LRS, paper="Adam, lr 1e-3 for every method")
# Table 1 tunes pFedHN's hypernetwork learning rate too: the pFedHN paper's 1e-2 is for 5,000 one-client steps, and
# at 10 rounds (cpu) it leaves the hypernetwork near its initialization.
HN_LRS = (1e-2, 1e-1, 3e-1)
TABLE1_TUNE = replace(TUNE, keys={"pfedhn": {"hn_lr": {"cpu": HN_LRS, "paper": HN_LRS}}})
SEEDS = {"smoke": [0], "cpu": [0, 1, 2, 3, 4], "paper": [0, 1, 2]}


# Partial baselines split the model's n blocks in the middle: blocks 1..⌊n/2⌋ shared, the top n − ⌊n/2⌋ personal
# (LG-FedAvg: the bottom ⌊n/2⌋ personal, Liang et al. 2020). n = 4 for pmixfed-cnn (smoke, cpu) and cnn (paper,
# MNIST), 5 for pmixfed-cifar-cnn (paper, CIFAR), 15 for mobilenet-v1. FedAlt, FedSim and LG-FedAvg start unseen
# clients from the clients' averaged personal part (spec §2.7).
COLD_START = {"unseen_personal": "average"}
CIFAR_TOP: dict[Any, dict[str, str]] = {"paper": {"personal": "top:3"}, ("paper", "mnist"): {"personal": "top:2"}}


def _methods(top: str, bottom: str, top_at: Mapping[Any, Mapping[str, Any]]) -> tuple[Arm, ...]:
    """The Table 1 methods, labelled by their registry names, with the partial baselines' split."""
    return (
        Arm("pmixfed", "pmixfed", PMIX),
        Arm("pmixfed-dynamic", "pmixfed-dynamic", PMIX),
        Arm("fedavg", "fedavg"),
        Arm("fedavg-ft", "fedavg-ft", {"ft_epochs": 2}),
        Arm("fedbabu", "fedbabu", {"ft_epochs": 2}),
        Arm("fedalt", "fedalt", {"personal": top, **COLD_START}, at=top_at),
        Arm("fedsim", "fedsim", {"personal": top, **COLD_START}, at=top_at),
        Arm("lg-fedavg", "lg-fedavg", {"personal": bottom, **COLD_START}),
        # α = β = the tuned lr, like every arm's step (the spec's α = β = 1e-3 fixed them: the lr grid did not reach
        # Per-FedAvg, whose first-order MAML steps are plain SGD steps, and at 1e-3 it stayed near chance)
        Arm("per-fedavg", "per-fedavg"),
        Arm("pfedhn", "pfedhn"),
        Arm("pfedme", "pfedme"),
        Arm("ditto", "ditto"),
    )


METHODS = _methods("top:2", "bottom:2", CIFAR_TOP)
# cpu: the paper's own baselines; FedAvg-FT, pFedMe and Ditto (not in the paper) run at the paper profile only, to
# keep the cpu grid within its budget. digits5-lite N100 has about 16 images per client: six methods only (no
# pFedHN there). pFedHN (a hypernetwork with 100 hidden units, pMixFed's adaptation) runs at every profile.
SMOKE_METHODS = ("pmixfed", "fedavg", "fedsim", "pfedhn")
CPU_METHODS = ("pmixfed", "pmixfed-dynamic", "fedavg", "fedbabu", "fedalt", "fedsim", "lg-fedavg", "per-fedavg", "pfedhn")
SUBSET = ("pmixfed", "pmixfed-dynamic", "fedavg", "fedalt", "fedsim", "lg-fedavg")
TABLE1_ONLY = {"smoke": SMOKE_METHODS, "cpu": CPU_METHODS, ("cpu", "digits5-lite", "N100"): SUBSET}


MU_ARMS = (
    Arm("sigmoid b=0.5", "pmixfed", {**PMIX, "b": 0.5}),
    Arm("sigmoid b=1", "pmixfed", PMIX),
    Arm(
        "sigmoid b=1, T=rounds (compressed)",
        "pmixfed",
        PMIX,
        at={profile: {"horizon": cell_rounds(DIGITS, profile)} for profile in DIGITS},
    ),
    Arm("sigmoid b=2", "pmixfed", {**PMIX, "b": 2.0}),
    Arm("simple 1-acc/100", "pmixfed", {**PMIX, "mu_mode": "simple"}),
    Arm("fixed mu=0.2", "pmixfed-dynamic", {**PMIX, "mu0": 0.2}),
    Arm("fixed mu=0.5", "pmixfed-dynamic", PMIX),
    Arm("fixed mu=0.8", "pmixfed-dynamic", {**PMIX, "mu0": 0.8}),
    Arm("pFedMix (lambda=0.5)", "pmixfed", {**PMIX, "mu_mode": "uniform"}),
    # Eq. 31's three stages are thirds of the run (epoch_global / 3): T = the rounds run, so that the cpu profile's 10
    # rounds see α = 0.1 → 100 → 0.1 (with T = 100 they would stay in the first stage, α = 0.1).
    Arm(
        "Beta adaptive",
        "pmixfed",
        {**PMIX, "mu_mode": "beta", "beta_schedule": "adaptive"},
        at={profile: {"horizon": cell_rounds(DIGITS, profile)} for profile in DIGITS},
    ),
    Arm("Beta α=1 (random)", "pmixfed", {**PMIX, "mu_mode": "beta", "beta_alpha": 1.0}),
)

# Fig. 4: the global model re-initialised after the round half-way through the run, and the same runs without it.
SHOCK = {profile: {"shock_round": max(1, cell_rounds(FIRST, profile) // 2)} for profile in FIRST}
SHOCK_ARMS = (
    Arm("pmixfed / none", "pmixfed", PMIX),
    Arm("pmixfed / shock", "pmixfed", PMIX, at=SHOCK),
    Arm("fedsim-shock / none", "fedsim-shock", {"personal": "top:2"}, at={"paper": CIFAR_TOP["paper"]}),
    Arm(
        "fedsim-shock / shock",
        "fedsim-shock",
        {"personal": "top:2"},
        at={**SHOCK, "paper": {**SHOCK["paper"], **CIFAR_TOP["paper"]}},
    ),
)

# A shocked run takes the learning rate chosen for the same run without the shock, so that a pair differs by the shock
# alone (tuned on the shocked run, pMixFed's pair ran at 3e-3 and 0.009).
SHOCK_TUNE = replace(TUNE, shared={"pmixfed / shock": "pmixfed / none", "fedsim-shock / shock": "fedsim-shock / none"})

# Table 3: client k has depth HETERO_DEPTHS[k mod 6] of the 15-block residual MLP; each block is averaged over its
# owners (spec §2.6 item 5).
HETERO_DEPTHS = (3, 5, 7, 9, 11, 13)
_DEPTHS = {**PMIX, "depths": list(HETERO_DEPTHS)}
_HETERO_FIELDS = dict(model="pmixfed-depth-mlp15", alpha=0.5, unseen_clients=0)
HETERO_ARMS = (
    Arm(C.HETERO[0], "pmixfed-hetero", _DEPTHS),
    Arm(C.HETERO[1], "pmixfed-hetero", {**_DEPTHS, "mu_mode": "uniform", "lam_b": 1.0, "lam_a": 0.0}),
    Arm(C.HETERO[2], "pmixfed-hetero", {**_DEPTHS, "mu_mode": "uniform", "lam_b": 0.0, "lam_a": 1.0}),
)

EXPERIMENTS = (
    Experiment(
        "table1",
        "Table 1 analogue: every cell of the profile, unseen clients before / after fine-tuning (matched protocol)",
        "fmnist",
        METHODS,
        SEEDS,
        fields=RECIPES,
        settings=cell_settings(TABLE1_CELLS, TABLE1_ONLY),
        tune=TABLE1_TUNE,
    ),
    Experiment(
        "table2",
        "Table 2: the Table 1 grid on CIFAR-10 and CIFAR-100 (the paper's two datasets there) with the 15-block "
        "MobileNetV1 (paper profile only; notebook switch run_mobilenet)",
        "cifar10",
        _methods("top:8", "bottom:7", {}),
        {"paper": SEEDS["paper"]},
        fields=RECIPES,
        settings=cell_settings(
            {"paper": tuple(c for c in TABLE1_CELLS["paper"] if c[0] in ("cifar10", "cifar100"))},
            fields={"paper": {"model": "mobilenet-v1"}},
        ),
    ),
    Experiment(
        "table2_mlp15",
        "Table 2 analogue: Fashion-MNIST N10 and N100 with a 15-block MLP (pmixfed-mlp15) in place of MobileNetV1; "
        "pMixFed, FedAvg, FedAlt and FedBABU only (compute bound)",
        "fmnist",
        tuple(a for a in _methods("top:8", "bottom:7", {}) if a.label in TABLE2_MLP15_ARMS),
        {"smoke": SEEDS["smoke"], "cpu": SEEDS["cpu"]},
        fields=RECIPES,
        settings=cell_settings(TABLE2_MLP15_CELLS, fields={profile: {"model": "pmixfed-mlp15"} for profile in ("smoke", "cpu")}),
        tune=TUNE,
        # Table 2's setting as §5.1 states it (the paper-profile runs are experiment table2's)
        paper_setting={
            "dataset": "CIFAR-10/CIFAR-100",
            "model": "MobileNet, 14 convolutional layers and 1 fully connected layer",
            "rounds": "100",
        },
    ),
    Experiment(
        "mismatched",
        "The paper's protocol (§5.2): each client tested on another client's test split, first dataset, N10",
        "fmnist",
        tuple(a for a in METHODS if a.label in ("pmixfed", "pmixfed-dynamic", "fedavg", "fedalt", "fedsim")),
        SEEDS,
        protocol=MISMATCHED,
        fields=RECIPES,
        settings=cell_settings(FIRST),
        tune=TUNE,
    ),
    Experiment(
        "mu",
        "Fig. 5 analogue: μ strategies on digits5-lite N10 (CIFAR-10 at paper)",
        "digits5-lite",
        MU_ARMS,
        SEEDS,
        fields=RECIPES,
        settings=cell_settings(DIGITS),
        tune=TUNE,
        paper_setting={"dataset": None, "model": None},
    ),
    Experiment(
        "shock",
        "Fig. 4 analogue: pMixFed and FedSim with and without a forced collapse, first dataset, N10",
        "fmnist",
        SHOCK_ARMS,
        SEEDS,
        fields=RECIPES,
        settings=cell_settings(FIRST),
        tune=SHOCK_TUNE,
        paper_setting={"dataset": None, "model": None},
    ),
    Experiment(
        "hetero",
        "Table 3 analogue: clients of depths 3–13 of one 15-block MLP in one federation, N = 12, C = 1, Dirichlet 0.5",
        "fmnist",
        HETERO_ARMS,
        SEEDS,
        fields=RECIPES,
        settings=cell_settings(
            FIRST,
            fields={
                "smoke": dict(_HETERO_FIELDS, num_clients=6, rounds=2),
                "cpu": dict(_HETERO_FIELDS, num_clients=12, rounds=14, eval_every=2),
                "paper": dict(_HETERO_FIELDS, num_clients=12, rounds=100, eval_every=5),
            },
        ),
        tune=TUNE,
        paper_setting={"dataset": None, "model": "MobileNet, 15 layers", "num_clients": "10"},
    ),
)

# Every result a Derived rule reads that is not an engine experiment (the notebook's section 1): '' for an exact check
# of the paper's own formulas, else why it is a stand-in (:attr:`~pflnb.experiments.paper.Paper.side`).
SIDE = {
    # Theorem 1/4 compares two update formulas (Eqs. 15 and 18): an identity of any loss, so one counterexample refutes
    # the printed one and the corrected one holds exactly (E1, float64)
    "lr": "",
    "fixed_point": "a deterministic 4-client quadratic in 6 dimensions (full participation, 5 local SGD steps, float64) "
    "in place of pMixFed's training (partial participation, layer-wise mixing, stochastic gradients)",
    "lemma1": "quadratics with exact expectations (Lemma 1: an isotropic one, where Eq. 21 is tight, and an anisotropic "
    "diagonal one; Theorem 3: one noisy isotropic one) in place of general L₁-smooth losses with bounded-variance "
    "stochastic gradients; Eq. 21's gradient norms read in expectation",
    "mu_curves": "",  # Eq. 6 itself, evaluated exactly
    "beta_pdfs": "",  # the Beta(α, α) density itself (scipy), at Fig. 7's α
}


# Results only the full reproduction computes (make reproduce-all): the sweeps and analogues added for coverage
PAPER = Paper(
    "pmixfed",
    "pMixFed: Mixing up Model Coefficients for Efficient Personalized Federated Learning (anonymous ICLR submission)",
    EXPERIMENTS,
    CLAIMS,
    COVERAGE,
    extended=("table2_mlp15",),
    side=SIDE,
)
