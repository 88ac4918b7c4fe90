"""pMixFed: Eq. 6/7 golden values, reductions to FedAvg / FedPer / FedAvg with a server learning rate,
logged internals, unseen clients, the forced shock."""

import numpy as np
import pytest
import torch
from conftest import make_toy_data

from pflnb.algorithms import get_algorithm_class, make_algorithm
from pflnb.algorithms.pmixfed import (
    beta_alpha_schedule,
    effective_server_lr,
    lambda_aggregate,
    lambda_broadcast,
    model_blocks,
    mu_sigmoid,
    mu_simple,
    shock,
)
from pflnb.fl import OptimConfig, RunSettings, run_simulation
from pflnb.fl import state as S
from pflnb.fl.engine import Context
from pflnb.models import build_model

OPT = OptimConfig(lr=0.05, batch_size=8)


def _run(method, data, params=None, model="small-bn-cnn", rounds=2, **kw):
    settings = RunSettings(**{"rounds": rounds, "optim": OPT, "progress": False, **kw})
    fn = lambda: build_model(model, data.input_shape, data.num_classes)  # noqa: E731
    return run_simulation(make_algorithm(method, params), data, fn, settings)


# ---- Eq. 7 golden tables (spec §2.3, n = 5, c = 1) ------------------------------------------------------
GOLDEN = {
    0.05: ([0.20, 0.15, 0.10, 0.05, 0.0], [0.95, 0.90, 0.85, 0.80, 0.75]),
    0.2: ([0.8, 0.6, 0.4, 0.2, 0.0], [0.8, 0.6, 0.4, 0.2, 0.0]),
    0.5: ([1, 1, 1, 0.5, 0], [0.5, 0, 0, 0, 0]),
    0.9: ([1, 1, 1, 0.9, 0], [0.1, 0, 0, 0, 0]),
}


@pytest.mark.parametrize("mu", sorted(GOLDEN))
def test_lambda_profiles_golden(mu):
    lam_b, lam_a = GOLDEN[mu]
    np.testing.assert_allclose(lambda_broadcast(mu, 5), lam_b, atol=1e-12)
    np.testing.assert_allclose(lambda_aggregate(mu, 5), lam_a, atol=1e-12)


def test_lambda_profile_limits():
    for n in (4, 5, 15):
        for mu in np.linspace(0, 1, 21):
            for c in (0.5, 1.0, 2.0):
                b, a = lambda_broadcast(mu, n, c), lambda_aggregate(mu, n, c)
                assert b[-1] == 0.0  # the head is never overwritten at broadcast
                assert np.all((0 <= b) & (b <= 1)) and np.all((0 <= a) & (a <= 1))
                assert np.all(np.diff(b) <= 1e-15) and np.all(np.diff(a) <= 1e-15)  # base → head decreasing
        np.testing.assert_array_equal(lambda_broadcast(0.0, n), np.zeros(n))  # μ = 0: keep local
        np.testing.assert_array_equal(lambda_aggregate(0.0, n), np.ones(n))  # μ = 0: global frozen
        np.testing.assert_array_equal(lambda_broadcast(1.0, n), [1.0] * (n - 1) + [0.0])  # μ = 1: FedPer
        np.testing.assert_array_equal(lambda_aggregate(1.0, n), np.zeros(n))  # μ = 1: plain averaging
    np.testing.assert_allclose(effective_server_lr([0.25, 1.0]), [0.75, 0.0])


def test_mu_rules():
    acc = np.array([10, 30, 50, 70, 90])
    np.testing.assert_allclose(mu_sigmoid(acc, 4, 100), [0.83, 0.69, 0.5, 0.31, 0.17], atol=0.005)
    np.testing.assert_allclose(mu_sigmoid(acc, 10, 100), [0.98, 0.88, 0.5, 0.12, 0.02], atol=0.005)
    assert all(abs(mu_sigmoid(a, t, 100) - 0.5) < 1e-15 for a in (50,) for t in (1, 50, 100))
    early = mu_sigmoid(np.linspace(0, 100, 101), 1, 100)
    assert early.min() >= 0.37 and early.max() <= 0.63  # t/T = 0.01 keeps μ near 0.5
    late = mu_sigmoid(np.array([30.0, 70.0]), 50, 100)
    assert late[0] > 0.99 and late[1] < 0.01  # near-step at t/T = 0.5
    np.testing.assert_allclose(mu_simple(acc), 1 - acc / 100)
    # the linear rule is the tangent of the sigmoid at acc = 50 when b·t/T = 0.04
    h = 1e-4
    slope = (mu_sigmoid(50 + h, 4, 100) - mu_sigmoid(50 - h, 4, 100)) / (2 * h)
    assert abs(slope - (-1 / 100)) < 1e-9
    assert np.all(np.diff(mu_sigmoid(np.linspace(0, 100, 50), 7, 30, b=2.0)) < 0)  # μ falls as accuracy rises


def test_beta_schedule():
    assert [beta_alpha_schedule(t, 30, "adaptive") for t in (1, 10, 11, 20, 21, 30)] == [0.1, 0.1, 100.0, 100.0, 0.1, 0.1]
    assert beta_alpha_schedule(5, 30, "constant", 2.0) == 2.0
    with pytest.raises(ValueError, match="beta_schedule"):
        beta_alpha_schedule(1, 3, "cosine")


def test_params_validated():
    for bad in ({"mu_mode": "cosine"}, {"mu0": 1.5}, {"c": 0}, {"acc_split": "train"}, {"lam_a": -0.1}, {"shock_part": "x"}):
        with pytest.raises(ValueError):
            make_algorithm("pmixfed", bad)


# ---- reductions ---------------------------------------------------------------------------------------
def _server(rec):
    return rec["final"]["server"]["model"]


def test_uniform_broadcast_one_aggregate_zero_is_fedavg(toy_data):
    mix = _run("pmixfed", toy_data, {"mu_mode": "uniform", "lam_b": 1.0, "lam_a": 0.0}, rounds=3)
    avg = _run("fedavg", toy_data, rounds=3)
    floats = [k for k, v in _server(avg).items() if v.is_floating_point()]  # BN counters are not averaged
    assert S.equal(_server(mix), _server(avg), floats)  # bit-identical global models


@pytest.mark.parametrize("lam", [0.3, 0.8])
def test_aggregation_mixing_is_fedavg_with_server_lr(toy_data, lam):
    mix = _run("pmixfed", toy_data, {"mu_mode": "uniform", "lam_b": 1.0, "lam_a": lam}, rounds=2)
    avg = _run("fedavg", toy_data, {"global_lr": 1.0 - lam}, rounds=2)
    plain = _run("fedavg", toy_data, rounds=2)
    gap = S.distance(_server(mix), _server(avg))
    assert gap < 1e-4 * S.norm(_server(avg))  # equal up to float32 rounding
    assert S.distance(_server(mix), _server(plain)) > 1e3 * gap  # and clearly not plain FedAvg


def test_fixed_mu_one_is_fedper(toy_data):
    mix = _run("pmixfed-dynamic", toy_data, {"mu0": 1.0}, rounds=3)
    per = _run("fedper", toy_data, rounds=3)
    model = build_model("small-bn-cnn", toy_data.input_shape, toy_data.num_classes)
    body, head = model.body_keys(), model.head_keys()
    body = [k for k in body if _server(per)[k].is_floating_point()]  # BN counters are not averaged
    assert S.equal(_server(mix), _server(per), body)
    for cid in range(toy_data.num_clients):
        assert S.equal(mix["final"]["clients"][cid]["model"], per["final"]["clients"][cid]["personal"], head)


def test_fixed_mu_zero_is_local_training(toy_data):
    mix = _run("pmixfed-dynamic", toy_data, {"mu0": 0.0}, rounds=2)
    loc = _run("local", toy_data, rounds=2)
    assert [e["test_acc"] for e in mix["evals"]] == [e["test_acc"] for e in loc["evals"]]
    assert S.equal(_server(mix), mix["final"]["server"]["init"])  # λ^A = 1: the global model never moves


# ---- internals, unseen clients, partial participation, shock ------------------------------------------
def test_internals_and_unseen():
    data = make_toy_data(num_clients=4, unseen=2)
    rec = _run("pmixfed", data, {"horizon": 3}, rounds=3, participation=0.5)
    n = len(model_blocks(build_model("small-bn-cnn", data.input_shape, data.num_classes)))
    for r in rec["rounds"]:
        assert len(r["selected"]) == 2
        lam_a = np.array(r["internals"]["lam_agg"])
        mu_a = r["internals"]["mu_agg"]
        np.testing.assert_allclose(lam_a, lambda_aggregate(mu_a, n), atol=1e-12)
        assert abs(mu_a - mu_sigmoid(r["internals"]["acc_global"], r["round"], 3)) < 1e-12
        for m in r["client_metrics"].values():
            assert abs(m["mu"] - mu_sigmoid(m["acc_local"], r["round"], 3)) < 1e-12
            np.testing.assert_allclose(m["lam_broadcast"], lambda_broadcast(m["mu"], n), atol=1e-12)
    assert len(rec["unseen"]["before"]) == 2 and len(rec["unseen"]["after"]) == 2
    never = set(range(4)) - {c for r in rec["rounds"] for c in r["selected"]}
    for cid in never:  # never-selected clients still hold the common init
        assert cid not in rec["final"]["clients"] or "model" not in rec["final"]["clients"][cid]


def test_beta_mode_runs_in_unit_interval(toy_data):
    a = _run("pmixfed", toy_data, {"mu_mode": "beta", "beta_schedule": "adaptive", "horizon": 2})
    b = _run("pmixfed", toy_data, {"mu_mode": "beta", "beta_schedule": "adaptive", "horizon": 2})
    assert [e["test_acc"] for e in a["evals"]] == [e["test_acc"] for e in b["evals"]]
    for r in a["rounds"]:
        lam = np.array(r["internals"]["lam_agg"])
        assert np.all((lam >= 0) & (lam <= 1))
        for m in r["client_metrics"].values():
            assert np.all((np.array(m["lam_broadcast"]) >= 0) & (np.array(m["lam_broadcast"]) <= 1))


def test_shock_reinitialises_only_its_part(toy_data):
    fn = lambda: build_model("small-bn-cnn", toy_data.input_shape, toy_data.num_classes)  # noqa: E731
    ctx = Context(toy_data, fn, OPT, 0, torch.device("cpu"))
    ctx.round = 3
    state = S.clone(ctx.model.state_dict())
    new = shock(ctx, state, "head")
    head = ctx.head_keys
    assert S.equal(new, state, [k for k in state if k not in head])
    assert not S.equal(new, state, [k for k in head])
    base = _run("fedsim-shock", toy_data, rounds=3)
    shocked = _run("fedsim-shock", toy_data, {"shock_round": 2}, rounds=3)
    assert base["evals"][0]["test_acc"] == shocked["evals"][0]["test_acc"]  # identical before the shock
    assert base["evals"][1]["test_acc"] != shocked["evals"][1]["test_acc"]  # evaluated with the re-initialised body


# ---- the declared experiments and the mismatched protocol ------------------------------------------------
def _blocks(cfg):
    """n, the model's number of blocks (what the layer splits count)."""
    size = cfg.image_size or {"mnist": 28}.get(cfg.dataset, 32)
    channels = 1 if cfg.dataset in ("fmnist", "mnist") else 3
    return len(model_blocks(build_model(cfg.model, (channels, size, size), 100 if cfg.dataset == "cifar100" else 10)))


def test_declared_runs_validate_and_follow_the_paper_at_every_profile():
    from pflnb.papers.pmixfed.paper import PAPER

    blocks = {}
    for profile in ("smoke", "cpu", "paper"):
        for exp in PAPER.experiments:
            if profile not in exp.seeds:
                continue
            for labels, cfg in exp.runs(profile, seeds=[0]):
                cfg.validate()
                assert cfg.profile == profile and cfg.dataset == labels["dataset"]
                # Adam (§5.1), but a method whose own steps are plain gradient steps (Per-FedAvg, pFedMe) runs with them
                optimizer = get_algorithm_class(cfg.method).steps_with or "adam"
                recipe = (cfg.optimizer, cfg.lr, cfg.batch_size, cfg.local_epochs, cfg.finetune_epochs)
                assert recipe == (optimizer, 1e-3, 32, 2, 2), (exp.name, labels)
                assert cfg.num_clients == {"N10": 10, "N100": 100}[labels["setting"]] or exp.name == "hetero"
                mp = cfg.method_params
                if cfg.method.startswith("pmixfed"):  # the paper's horizon T = 100 unless compressed; μ from val
                    # Eq. 31's adaptive Beta schedule runs by thirds of the rounds run
                    compressed = labels["label"].endswith("(compressed)") or labels["label"] == "Beta adaptive"
                    assert mp["acc_split"] == "val" and mp["horizon"] == (cfg.rounds if compressed else 100)
                if "personal" in mp:  # split in the middle: shared blocks 1..⌊n/2⌋
                    key = (cfg.model, cfg.dataset, cfg.image_size)
                    n = blocks[key] = blocks.get(key) or _blocks(cfg)
                    side, k = mp["personal"].split(":")
                    assert int(k) == (n // 2 if side == "bottom" else n - n // 2), (exp.name, labels, mp)
                    assert side == ("bottom" if cfg.method == "lg-fedavg" else "top")
    assert {n for (model, _, _), n in blocks.items() if model == "mobilenet-v1"} == {15}
    assert {n for (model, _, _), n in blocks.items() if model == "pmixfed-mlp15"} == {15}  # Table 2 analogue: 8 / 7


def test_cells_runs_are_labelled_and_restricted():
    from pflnb.experiments.paper import Experiment
    from pflnb.papers.pmixfed.cells import FIRST, cell_settings
    from pflnb.papers.pmixfed.paper import METHODS, PAPER

    table1 = PAPER.experiment("table1")
    runs = table1.runs("cpu", seeds=[0, 1])
    cells = list(dict.fromkeys((lab["dataset"], lab["setting"]) for lab, _ in runs))
    assert cells == [("fmnist", "N10"), ("fmnist", "N100"), ("digits5-lite", "N10"), ("digits5-lite", "N100")]
    per_cell = {c: [lab["label"] for lab, _ in runs if (lab["dataset"], lab["setting"]) == c and lab["seed"] == 0] for c in cells}
    assert len(per_cell[("fmnist", "N10")]) == 9 and "pfedme" not in per_cell[("fmnist", "N10")]
    assert "pfedhn" in per_cell[("fmnist", "N10")] and "pfedhn" not in per_cell[("digits5-lite", "N100")]
    assert per_cell[("digits5-lite", "N100")] == ["pmixfed", "pmixfed-dynamic", "fedavg", "fedalt", "fedsim", "lg-fedavg"]
    assert len({lab["label"] for lab, _ in table1.runs("paper", seeds=[0])}) == 12
    assert [lab["dataset"] for lab, _ in table1.runs("cpu", seeds=[0], dataset="digits5-lite")][0] == "digits5-lite"
    n100 = next(cfg for lab, cfg in runs if lab["setting"] == "N100")
    assert n100.participation == 0.1 and n100.num_clients == 100
    shock = PAPER.experiment("shock").runs("cpu", seeds=[0])
    assert [cfg.method_params.get("shock_round") for _, cfg in shock] == [None, 5, None, 5]  # half-way through 10 rounds
    with pytest.raises(ValueError, match="no settings for profile 'cpu'"):
        PAPER.experiment("table2").runs("cpu")
    # Table 2: "trained on the MobileNet model across two datasets: CIFAR-10, CIFAR-100" (no MNIST cell)
    table2 = {(lab["dataset"], lab["setting"]) for lab, _ in PAPER.experiment("table2").runs("paper", seeds=[0])}
    assert table2 == {(d, n) for d in ("cifar10", "cifar100") for n in ("N10", "N100")}
    with pytest.raises(ValueError, match="runs no setting on 'cifar10'"):
        table1.runs("cpu", dataset="cifar10")
    with pytest.raises(ValueError, match="no cells"):
        cell_settings({"cpu": (("cifar10", "N10"),)})
    with pytest.raises(KeyError, match="no arm 'fedprox'"):
        Experiment("x", "", "fmnist", METHODS, {"cpu": [0]}, settings=cell_settings(FIRST, {"cpu": ("fedprox",)}))


def test_mismatched_protocol_swaps_test_splits_only():
    from pflnb.papers.pmixfed.experiments import mismatch_test_splits

    data = make_toy_data(num_clients=4, unseen=3)
    mm = mismatch_test_splits(data, seed=0)
    for group, new in ((data.clients, mm.clients), (data.unseen, mm.unseen)):
        tests = [c.test for c in group]
        for i, (old, c) in enumerate(zip(group, new)):
            assert c.train is old.train and c.val is old.val and c.cid == old.cid
            j = next(j for j, t in enumerate(tests) if t is c.test)
            assert j != i  # every client is tested on another client's test split
        assert sorted(id(c.test) for c in new) == sorted(id(t) for t in tests)  # a permutation
