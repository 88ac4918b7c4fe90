"""FedFac's declaration (pflnb/papers/fedfac/paper.py): named settings with their own arms, the chosen FedFac
parameters under each arm's own, the paper profile's CIFAR settings, and the comparison not testable at smoke."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from pflnb.experiments import profile_config
from pflnb.experiments.claims import NOT_TESTABLE
from pflnb.experiments.config import ExperimentConfig
from pflnb.experiments.paper import (
    TUNING_SEED,
    Arm,
    Compare,
    Experiment,
    ExperimentResult,
    Paper,
    Setting,
    decide,
    run_experiment,
)
from pflnb.papers.fedfac.paper import (
    FEDFAC_DEFAULT,
    FMNIST_FIELDS,
    KNOBS,
    OFFICIAL,
    PAPER,
    SETTINGS,
    SWEEP_LEVELS,
    SWEEPS,
    TUNING_SEEDS,
    shown,
    tau_params,
    tuned,
)

CHOSEN = dict(layers=(3,), q=1.0, threshold="given", tau=None, kappa=0.5)


def _by(runs, **where):
    return [cfg for lab, cfg in runs if all(lab[k] == v for k, v in where.items())]


def test_every_setting_runs_its_own_arms_in_order():
    exp = PAPER.experiment("table2")
    runs = exp.runs("cpu")
    arms = [a.label for a in exp.arms]
    for setting in exp.settings["cpu"]:
        labels = [lab["label"] for lab, _ in runs if lab["setting"] == setting.name]
        want = [a for a in arms if a in setting.arms]
        assert labels == [a for a in want for _ in exp.seeds_at("cpu")]  # arms in declared order, then seeds
        for cfg in _by(runs, setting=setting.name):
            assert all(getattr(cfg, k) == v for k, v in SETTINGS[setting.name].items())
    assert [lab["setting"] for lab, _ in runs] == sorted([lab["setting"] for lab, _ in runs], key=["Dir(0.1)", "Dir(1.0)"].index)
    # the experiment's fields over the profile table: the FedFac net on Fashion-MNIST at 14×14
    base = profile_config("cpu", "fmnist", **FMNIST_FIELDS["cpu"])
    (fedavg,) = _by(runs, setting="Dir(1.0)", label="FedAvg", seed=0)
    assert fedavg.key() == base.replace(method="fedavg", partition="dirichlet", alpha=1.0, seed=0).key()
    for cfg in _by(runs, label="FedFac dynamic"):  # the new-client Ensemble at the last round only
        assert cfg.method_params["ensemble_from"] == cfg.rounds and cfg.method_params["mode"] == "dynamic"


def test_chosen_fedfac_parameters_go_under_each_arms_own():
    paper = tuned(CHOSEN)
    for name in ("table2", "digits5"):
        for _, cfg in paper.experiment(name).runs("cpu"):
            if cfg.method == "fedfac":
                assert {k: cfg.method_params[k] for k in CHOSEN} == CHOSEN
            else:
                assert not set(CHOSEN) & set(cfg.method_params)
    for _, cfg in paper.experiment("ablation").runs("cpu"):  # Table 8 keeps the paper's τ = median
        assert cfg.method_params["q"] == 0.5 and cfg.method_params["threshold"] == "quantile"
        assert cfg.method_params["layers"] == (3,) and cfg.method_params["kappa"] == 0.5
    masks = {lab["label"]: cfg.method_params.get("mask") for lab, cfg in paper.experiment("ablation").runs("cpu")}
    assert masks["mask shared"] == "shared" and masks["mask personalized"] == "personal" and masks["FA (dynamic)"] is None
    off = _by(paper.experiment("official").runs("cpu"), label="official (τ = mean ν, bias local)")
    assert all({**cfg.method_params, **OFFICIAL} == cfg.method_params and cfg.method_params["q"] == 0.5 for cfg in off)
    pkg = _by(paper.experiment("official").runs("cpu"), label="package (τ tuned, bias follows)")
    assert all(cfg.method_params["threshold"] == "given" for cfg in pkg)
    # the declared paper holds the defaults, before tuning
    (cfg,) = _by(PAPER.experiment("table2").runs("smoke"), label="FedFac dynamic")
    assert {k: cfg.method_params[k] for k in FEDFAC_DEFAULT} == FEDFAC_DEFAULT


def test_tuning_experiments_try_the_profiles_values_on_one_setting():
    for knob, (name, params, values) in KNOBS.items():
        exp = PAPER.experiment(name)
        for profile in ("smoke", "cpu", "paper"):
            runs = exp.runs(profile)
            seeds = TUNING_SEEDS[profile]  # two at cpu and paper: a choice never rides one seed
            assert len(seeds) == (1 if profile == "smoke" else 2)
            assert [(lab["label"], lab["seed"]) for lab, _ in runs] == [
                (shown(knob, v), s) for v in values[profile] for s in seeds
            ]
            assert len({lab["setting"] for lab, _ in runs}) == 1
            runs = [(lab, cfg) for lab, cfg in runs if lab["seed"] == seeds[0]]
            for (_, cfg), v in zip(runs, values[profile]):
                assert {k: cfg.method_params[k] for k in params(v)} == params(v)
    assert tau_params(1.0)["threshold"] == "given" and shown("τ (quantile)", 1.0) == "+∞"


def test_sweeps_judge_tables_4_to_6_on_the_verdict_seeds_at_two_levels():
    """Each sweep runs its knob's values at every level on the verdict seeds (never the tuning seed), from the
    paper's protocol: Λ at τ = 50 %, κ = 0.85 whatever was chosen; τ and κ at the chosen Λ, κ = 0.85, τ = median."""
    paper = tuned(CHOSEN)
    for knob, (name, values) in SWEEPS.items():
        exp = paper.experiment(name)
        runs = exp.runs("cpu")
        assert len(SWEEP_LEVELS["cpu"]) >= 2 and len(values["cpu"]) >= 2
        assert {lab["seed"] for lab, _ in runs} == {0, 1, 2, 3, 4} and TUNING_SEED not in exp.seeds_at("paper")
        want = [(s, shown(knob, v), seed) for s in SWEEP_LEVELS["cpu"] for v in values["cpu"] for seed in range(5)]
        assert [(lab["setting"], lab["label"], lab["seed"]) for lab, _ in runs] == want
        for (_, cfg), (_, label, _) in zip(runs, want):
            v = {shown(knob, x): x for x in values["cpu"]}[label]
            assert {k: cfg.method_params[k] for k in KNOBS[knob][1](v)} == KNOBS[knob][1](v)
            assert cfg.method_params["layers"] == ((v,) if knob == "Λ" else CHOSEN["layers"])
            if knob != "τ (quantile)":
                assert cfg.method_params["q"] == 0.5 and cfg.method_params["threshold"] == "quantile"
            if knob != "κ":
                assert cfg.method_params["kappa"] == FEDFAC_DEFAULT["kappa"]
    # Table 4's sweep runs the Λ tuning's configs on other seeds
    tune_runs = PAPER.experiment("tune_layers").runs("cpu")  # the Λ phase starts from the defaults
    sweep_runs = paper.experiment("sweep_layers").runs("cpu", seeds=TUNING_SEEDS["cpu"])
    assert {c.key() for _, c in tune_runs} <= {c.key() for _, c in sweep_runs}


def test_paper_profile_runs_the_cifar_settings_with_their_own_fields():
    runs = PAPER.experiment("table2").runs("paper")
    assert {cfg.dataset for _, cfg in runs} == {"cifar10", "cifar100"}
    assert {lab["label"] for lab, _ in runs} == {a.label for a in PAPER.experiment("table2").arms}  # every method
    for _, cfg in runs:
        cfg.validate()
        assert cfg.model == "cifar-cnn" and cfg.rounds == 200 and cfg.num_clients == 100 and cfg.local_epochs == 5
        assert cfg.finetune_epochs == ExperimentConfig.finetune_epochs and cfg.profile == "paper"
        if cfg.dataset == "cifar100":  # not the Fashion-MNIST paper row's α: CIFAR has no row in the profile table
            assert cfg.partition == "pathological" and cfg.alpha == ExperimentConfig.alpha
    d5 = PAPER.experiment("digits5")
    assert {cfg.dataset for _, cfg in d5.runs("paper")} == {"digits5"} and len(d5.runs("paper")) == len(d5.arms) * 3
    assert {cfg.dataset for _, cfg in d5.runs("cpu")} == {"digits5-lite"}
    for profile in ("smoke", "cpu", "paper"):
        for cfg in _by(d5.runs(profile), label="FedFac dynamic"):
            assert cfg.method_params["ensemble_from"] == cfg.rounds


def test_an_experiment_with_settings_checks_its_declaration():
    arms = (Arm("A", "fedavg"), Arm("B", "local"))
    with pytest.raises(KeyError, match="no arm 'C'"):
        Experiment("x", "", "digits5-lite", arms, {"smoke": [0]}, settings={"smoke": (Setting("s", arms=("C",)),)})
    with pytest.raises(ValueError, match="unknown profile"):
        Experiment("x", "", "digits5-lite", arms, {"smoke": [0]}, settings={"laptop": (Setting("s"),)})
    with pytest.raises(ValueError, match="no grid"):
        Experiment(
            "x", "", "digits5-lite", arms, {"smoke": [0]}, grid={"lr": {"smoke": (0.1,)}}, settings={"smoke": (Setting("s"),)}
        )
    exp = Experiment("x", "", "digits5-lite", arms, {"smoke": [0], "cpu": [0]}, settings={"smoke": (Setting("s"),)})
    with pytest.raises(ValueError, match="no settings for profile 'cpu'"):
        exp.runs("cpu")


def test_a_settings_experiment_runs_and_its_table_names_the_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("PFLNB_RESULTS", str(tmp_path))
    exp = Experiment(
        "toy",
        "",
        "digits5-lite",
        (Arm("FedAvg", "fedavg"), Arm("Local", "local")),
        {"smoke": [0]},
        {"smoke": dict(rounds=1, model="tiny-bn-cnn")},
        settings={"smoke": (Setting("lr 0.1", {"lr": 0.1}, ("FedAvg",)), Setting("lr 0.01", {"lr": 0.01}))},
    )
    res = run_experiment(Paper("toy", "", (exp,)), "toy", "smoke", progress=False)
    assert list(res.table[["setting", "label"]].itertuples(index=False, name=None)) == [
        ("lr 0.1", "FedAvg"),
        ("lr 0.01", "FedAvg"),
        ("lr 0.01", "Local"),
    ]
    assert [r["config"]["lr"] for r in res.records] == [0.1, 0.01, 0.01]
    assert res.values("FedAvg", setting="lr 0.01") == {0: res.records[1]["summary"]["test_acc"]}


def test_the_feature_shift_comparison_is_not_testable_at_smoke():
    (spec,) = [c for c in PAPER.claims if isinstance(c, Compare) and c.untestable]
    exp = PAPER.experiment("digits5")
    table = pd.DataFrame(
        {"setting": "digits5-lite", "label": ["FedAvg"] * 3 + ["FedFac dynamic"] * 3, "seed": [0, 1, 2] * 2}
    ).assign(test_acc=[0.5, 0.52, 0.51, 0.6, 0.63, 0.61])
    paper = dataclasses.replace(PAPER, claims=(spec,), coverage=())
    (claim,) = decide(paper, {"digits5": ExperimentResult(exp, "cpu", table, [])})
    assert claim.verdict == "reproduced" and claim.seeds == [0, 1, 2] and claim.outcome.ours.startswith("FedFac ")
    (claim,) = decide(paper, {"digits5": ExperimentResult(exp, "smoke", table, [])})
    assert claim.verdict == NOT_TESTABLE and claim.seeds is None


def test_the_paper_setting_module_runs_the_simulation_cell_and_decides_its_three_claims(tmp_path, monkeypatch):
    """pflnb.papers.fedfac.paper_setting, at the smoke profile: the simulation runs of the (p, α) cell the claims read,
    every method once, and exactly its declared claims (not testable at smoke); its side results' stand-in follows the
    profile (at the paper's sizes, only the label rule of spec A17 remains)."""
    from pflnb.experiments.executors import Serial
    from pflnb.papers.fedfac import paper_setting as ps
    from pflnb.papers.fedfac.simstudy import SIM_METHODS, sim_stand_in

    monkeypatch.setenv("PFLNB_RESULTS", str(tmp_path))
    monkeypatch.setattr(ps, "PROFILE", "smoke")
    results = ps.run(Serial(), progress=False)
    assert set(results["sim"].method) >= set(SIM_METHODS) and set(zip(results["sim"].p, results["sim"].alpha)) == {ps.CELL}
    decided = ps.claims(results)
    assert [c.claim for c in decided] == list(ps.CLAIMS)
    assert {c.verdict for c in decided} == {NOT_TESTABLE}
    assert sim_stand_in("paper") == sim_stand_in("paper", labels=False) and "A17" in sim_stand_in("paper")
    assert "C = 20 clients" in sim_stand_in("cpu") and "C = 100" not in sim_stand_in("paper")
