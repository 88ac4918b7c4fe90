"""FedFac experiment helpers: the motivating experiment (Figs. 1–2), the sizes per profile, the tuning on validation
accuracy and the tables of the runs."""

import dataclasses

import numpy as np
import pandas as pd
import pytest
from conftest import make_toy_data

from pflnb.algorithms import make_algorithm
from pflnb.data.simulation_fedfac import digits_clients
from pflnb.experiments.executors import Serial, execute
from pflnb.experiments.paper import ExperimentResult
from pflnb.fl import OptimConfig, RunSettings, run_simulation
from pflnb.models import MLP, build_model
from pflnb.papers.fedfac import experiments as X
from pflnb.papers.fedfac.paper import FEDFAC_DEFAULT, PAPER, tau_params
from pflnb.theory.factor import kl_entropy


def test_digits_clients_iid_and_one_digit_per_client():
    non = digits_clients("non-iid", 20, seed=0)
    iid = digits_clients("iid", 20, seed=0)
    for fd in (non, iid):
        assert fd.num_clients == 20 and fd.input_shape == (1, 8, 8)
        assert sum(len(c.train) + len(c.val) + len(c.test) for c in fd.clients) == 1797
        assert 0.0 <= float(fd.clients[0].train.x.min()) and float(fd.clients[0].train.x.max()) <= 1.0
    for c in non.clients:  # each digit split into 2 groups: client c holds digit c // 2 only
        ys = np.concatenate([s.y.numpy() for s in (c.train, c.val, c.test)])
        assert set(ys.tolist()) == {c.cid // 2} and c.domain == f"digit {c.cid // 2}"
    assert all(len(set(c.train.y.tolist())) >= 5 for c in iid.clients)
    with pytest.raises(ValueError, match="multiple of 10"):
        digits_clients("non-iid", 25)
    with pytest.raises(ValueError, match="split"):
        digits_clients("dirichlet", 20)


def test_activation_spread():
    act = np.array([[1.0, 3.0, 1.0, 3.0], [0.0, 0.0, 0.0, 4.0], [2.0, 2.0, 2.0, 2.0]])  # shared, one-client, constant
    assert X.activation_spread(act) == pytest.approx(0.5 * (0.5 + np.sqrt(3.0)))  # constant neurons are left out


def test_kl_entropy_gaussian_scale_and_ties():
    x = np.random.default_rng(0).normal(size=4000)
    assert kl_entropy(x) == pytest.approx(0.5 * np.log(2 * np.pi * np.e), abs=0.05)  # N(0, 1): 1.419
    assert kl_entropy(3.0 * x + 1.0) == pytest.approx(kl_entropy(x) + np.log(3.0), abs=1e-9)  # H(aX+b) = H(X) + log a
    ties = np.r_[np.zeros(10), 1.0]
    assert np.isfinite(kl_entropy(ties)) and kl_entropy(ties) < -10  # clipped distances: very low, not −∞
    with pytest.raises(ValueError, match="k"):
        kl_entropy(np.arange(3.0), k=3)


def test_neuron_activations_non_iid_is_client_specific():
    st = X.MotivationSetting(n_clients=20, hidden=32, epochs=3)
    runs = {s: X.neuron_activations(s, st, seed=0) for s in ("iid", "non-iid")}
    for r in runs.values():
        assert r["activations"].shape == (32, 20) and (r["activations"] >= 0).all()
        assert r["entropy"].shape == (32,) and np.isnan(r["entropy"][~r["alive"]]).all()
        assert np.isfinite(r["entropy"][r["alive"]]).all() and r["test_acc"].shape == (20,)
    again = X.neuron_activations("non-iid", st, seed=0)  # deterministic from the seed
    assert np.array_equal(again["activations"], runs["non-iid"]["activations"])

    # a neuron's mean activation varies much more across one-digit clients than across IID clients
    spread = {s: X.activation_spread(r["activations"]) for s, r in runs.items()}
    assert spread["non-iid"] > 1.25 * spread["iid"]
    assert X.entropy_summary(runs["non-iid"]["entropy"])["iqr"] > X.entropy_summary(runs["iid"]["entropy"])["iqr"]


def test_neuron_activations_start_from_one_common_init():
    # with a vanishing learning rate every client keeps the common init: activations differ only through data
    st = X.MotivationSetting(n_clients=10, hidden=16, epochs=1, lr=1e-12)
    r = X.neuron_activations("non-iid", st, seed=3)
    data = digits_clients("non-iid", 10, seed=3)
    settings = RunSettings(rounds=1, seed=3, optim=OptimConfig(lr=1e-12, local_epochs=1, optimizer="adam"), progress=False)
    rec = run_simulation(make_algorithm("fedavg"), data, lambda: MLP(64, 10, hidden=(16,)), settings)
    model = MLP(64, 10, hidden=(16,))
    model.load_state_dict(rec["final"]["server"]["model"])
    for cid in (0, 9):
        expected = model.features(data.clients[cid].train.x).mean(0).detach().numpy()
        assert np.allclose(r["activations"][:, cid], expected, atol=1e-5)


def test_ensemble_only_from_the_given_round():
    data = make_toy_data(unseen=1)
    settings = RunSettings(rounds=3, optim=OptimConfig(lr=0.05, batch_size=8), progress=False)
    fn = lambda: build_model("mlp2", data.input_shape, data.num_classes)  # noqa: E731
    params = {"layers": (1,), "ensemble_unseen": True, "ensemble_from": 3, "max_iter": 5}
    rec = run_simulation(make_algorithm("fedfac", params), data, fn, settings)
    assert [("extra" in e) for e in rec["evals"]] == [False, False, True]
    with pytest.raises(ValueError, match="ensemble_from"):
        make_algorithm("fedfac", {"ensemble_from": -1})


def test_train_time_ignores_evaluation_and_a_slow_first_round():
    rounds = [{"time": {"local": 9.0, "aggregate": 1.0, "eval": 5.0}, "internals": {"fa_time": 0.5}}]
    rounds += [{"time": {"local": 0.9, "aggregate": 0.1, "eval": 5.0}, "internals": {"fa_time": 0.05}} for _ in range(4)]
    rec = {"rounds": rounds}
    assert X.train_time(rec) == pytest.approx(5 * 1.0)
    assert X.fa_time_share(rec) == pytest.approx(0.7 / 14.0)


def test_sizes_per_profile():
    for profile in ("smoke", "cpu", "paper"):
        z = X.sizes(profile)
        assert z["theory_seeds"] and z["sim_seeds"] and z["motivation_seeds"] and (0.5, 0.4) in z["sim_grid"]
    assert len(X.sizes("paper")["sim_grid"]) > len(X.sizes("cpu")["sim_grid"]) > len(X.sizes("smoke")["sim_grid"])
    with pytest.raises(ValueError, match="profile"):
        X.sizes("gpu")


def _rec(val, test):
    return {"summary": {"best_val_acc": val, "test_acc": test}}


def test_choice_reads_validation_never_test():
    recs = [_rec(0.40, 0.90), _rec(0.50, 0.10), _rec(0.45, 0.95)]
    assert X.choose_on_validation(recs, [1, 2, 3]) == 2  # best validation, although its test accuracy is the worst
    assert X.choose_on_validation([_rec(0.5, 0.1), _rec(0.5, 0.9)], ["a", "b"]) == "a"  # ties: the first
    t = X.tuning_table([("Λ", [1, 2, 3], recs, 2)])
    assert t.chosen.tolist() == [False, True, False] and t.val_acc.tolist() == pytest.approx([40.0, 50.0, 45.0])
    assert t.value.tolist() == ["{1}", "{2}", "{3}"]
    assert X.tuning_table([("τ (quantile)", [0.25, 1.0], recs[:2], 1.0)]).value.tolist() == ["25 %", "+∞"]
    with pytest.raises(ValueError, match="one record per value"):
        X.choose_on_validation(recs, [1, 2])
    # two tuning seeds a value: the mean decides (value 1: 0.45 against value 2: 0.40, though 2 has the best run) ...
    two = [_rec(0.44, 0.1), _rec(0.60, 0.1), _rec(0.46, 0.1), _rec(0.20, 0.1)]
    assert X.choose_on_validation(two, [1, 2, 1, 2]) == 1
    t = X.tuning_table([("κ", [1, 2, 1, 2], two, 1)])
    assert t.val_acc.tolist() == pytest.approx([45.0, 40.0]) and t.runs.tolist() == [2, 2] and t.chosen.tolist() == [True, False]
    # ... and a value at which one seed collapsed below the floor (or diverged) is ruled out, whatever its other seed
    assert X.choose_on_validation([_rec(0.9, 0.1), _rec(0.12, 0.1), _rec(0.5, 0.1), _rec(0.5, 0.1)], [1, 1, 2, 2], 0.15) == 2
    assert X.choose_on_validation([_rec(0.9, 0.1), {"status": "diverged"}, _rec(0.5, 0.1), _rec(0.5, 0.1)], [1, 1, 2, 2]) == 2
    assert tau_params(1.0) == {"q": 1.0, "threshold": "given", "tau": None}  # τ = +∞, the official switch
    assert tau_params(0.75) == {"q": 0.75, "threshold": "quantile"}


def test_tune_chooses_each_knob_on_validation_and_carries_the_choice_forward(monkeypatch):
    """Λ, then τ at the chosen Λ, then κ at both: each phase runs its declared experiment on the choices so far and
    picks the best validation accuracy, whatever the test accuracy."""
    seen = []

    def fake_run(paper, name, profile, *, seeds=None, **kw):
        exp = paper.experiment(name)
        runs = exp.runs(profile, seeds)
        seen.append((name, seeds, [cfg.method_params for _, cfg in runs]))
        val = {"tune_layers": [0.3, 0.2, 0.6, 0.1], "tune_tau": [0.1, 0.2, 0.3, 0.4], "tune_kappa": [0.5, 0.4]}[name]
        test = list(reversed(val))  # test accuracy ranks the other way round: it must not matter
        records = [{"summary": {"best_val_acc": v, "test_acc": t}} for v, t in zip(val, test)]
        table = pd.DataFrame([lab for lab, _ in runs])
        return ExperimentResult(exp, profile, table, records)

    monkeypatch.setattr(X, "run_experiment", fake_run)
    params, table = X.tune("cpu", seed=3)
    assert [name for name, _, _ in seen] == ["tune_layers", "tune_tau", "tune_kappa"]
    assert all(seeds == [3] for _, seeds, _ in seen)
    assert [p["layers"] for p in seen[0][2]] == [(1,), (2,), (3,), (4,)]  # Λ at τ = median, κ = 0.85
    assert all(p["q"] == 0.5 and p["kappa"] == 0.85 for p in seen[0][2])
    assert all(p["layers"] == (3,) for p in seen[1][2])  # τ at the chosen Λ
    assert seen[1][2][-1]["threshold"] == "given" and seen[1][2][-1]["tau"] is None  # +∞ as the official switch
    assert all(p["layers"] == (3,) and p["threshold"] == "given" for p in seen[2][2])  # κ at the chosen Λ and τ
    assert params == {**FEDFAC_DEFAULT, "layers": (3,), **tau_params(1.0), "kappa": 0.5}
    assert table.chosen.tolist() == [False, False, True, False, False, False, False, True, True, False]
    assert table.value.tolist()[:4] == ["{1}", "{2}", "{3}", "{4}"] and set(table.setting) == {"Dir(0.1)"}


def test_label_balance_literal_vs_centred(tmp_path):
    st = X.sim_setting("smoke", n_clients=12, n_per_client=60)
    t = X.label_balance(st, seed=1)
    centred = t["positive share (median-centred)"].to_numpy()
    literal = t["positive share (literal 1{y*>0})"].to_numpy()
    assert np.allclose(centred, 0.5, atol=1 / 60)  # the median splits every client in half
    assert np.median(np.maximum(literal, 1 - literal)) >= 0.8  # the literal rule: mostly one class per client
    rec = X.SimJob(X.sim_setting("smoke", center=False), "fedavg", 0, "smoke").compute(tmp_path)
    assert rec["setting"]["center"] is False


def test_time_and_new_client_tables():
    rounds = lambda t: [{"time": {"local": t, "aggregate": 0.0}, "internals": {"fa_time": 0.1 * t}}] * 4  # noqa: E731
    table = pd.DataFrame({"setting": ["A", "A"], "label": ["FedAvg", "FedFac dynamic"], "seed": [0, 0]})
    recs = [
        {"rounds": rounds(1.0), "unseen": {"before": [0.2, 0.4], "after": [0.5, 0.7]}, "evals": [{}]},
        {
            "rounds": rounds(3.0),
            "unseen": {"before": [0.0], "after": [0.3, 0.5]},
            "evals": [{"extra": {"ensemble_unseen": [0.8, 0.6]}}],
        },
    ]
    t2 = ExperimentResult(PAPER.experiment("table2"), "cpu", table, recs)
    tt = X.time_table(t2)
    assert tt.ratio.tolist() == pytest.approx([1.0, 3.0]) and tt.fa_share.iloc[1] == pytest.approx(0.1)
    t3 = X.new_clients_table(t2).set_index("method").acc
    assert t3["FedAvg"] == pytest.approx(0.3) and t3["FedAvg+"] == pytest.approx(0.6)
    assert t3["FedFac LocalTrain"] == pytest.approx(0.4) and t3["FedFac Ensemble"] == pytest.approx(0.7)


# ---- Table 7's paired timing ------------------------------------------------------------------------------------

PAIR = ("FedAvg", "FedFac dynamic")


def _smoke_table2():
    """Table 2's declared smoke runs as an experiment result whose records hold their configs (seeds 0 and 1), and the
    runs."""
    exp = PAPER.experiment("table2")
    runs = [(lab, cfg) for lab, cfg in exp.runs("smoke", seeds=[0, 1]) if lab["label"] in PAIR]
    table = pd.DataFrame([lab for lab, _ in runs])
    return ExperimentResult(exp, "smoke", table, [{"config": cfg.to_dict()} for _, cfg in runs]), runs


def test_paired_timing_job_takes_the_configs_table2_ran():
    t2, runs = _smoke_table2()
    job = X.paired_timing_job(t2)
    want = {(lab["label"], lab["seed"]): cfg for lab, cfg in runs}
    assert job.reference.key() == want[("FedAvg", 0)].key() and job.method.key() == want[("FedFac dynamic", 0)].key()
    assert (job.setting, job.seed, job.repetitions, job.rounds) == ("patho(S=2)", 0, 2, 1)  # smoke sizes
    assert job.profile == "smoke" and job.label() == "fedfac-paired-timing"
    other = X.paired_timing_job(t2, seed=1, repetitions=4, rounds=2)
    assert other.reference.key() == want[("FedAvg", 1)].key() and other.key() != job.key()
    assert X.paired_timing_job(t2, repetitions=3).key() != job.key()  # what is timed is in the key
    with pytest.raises(ValueError, match="'FedRep' ran 0 times"):
        X.paired_timing_job(t2, names=("FedAvg", "FedRep"))
    with pytest.raises(ValueError, match="repetitions must be an integer >= 2"):
        X.paired_timing_job(t2, repetitions=1).validate()
    with pytest.raises(ValueError, match="same data and seed"):
        dataclasses.replace(job, method=other.method).validate()


def test_paired_timing_alternates_the_methods_and_pairs_each_repetition(monkeypatch):
    """The order run is A B A B ... after one untimed round of each; each repetition's ratio is the method's median
    per-round time over the reference's, from the times each call returned."""
    calls = []

    def fake(self, cfg, data, rounds):
        calls.append((cfg.method, rounds))
        k = len(calls)  # the k-th call returns 0.1 k, 0.1 k + 0.01, 0.1 k + 0.02, ...: median 0.1 k + 0.01 (3 rounds)
        return [0.1 * k + 0.01 * i for i in range(rounds)]

    monkeypatch.setattr(X.PairedTimingJob, "_timed", fake)
    job = dataclasses.replace(X.paired_timing_job(_smoke_table2()[0]), repetitions=3, rounds=3)
    rec = job.compute(None)
    assert calls == [("fedavg", 1), ("fedfac", 1)] + [(m, 3) for _ in range(3) for m in ("fedavg", "fedfac")]
    assert rec["order"] == [[r, n] for r in range(3) for n in PAIR]
    expected = [(0.1 * (4 + 2 * r) + 0.01) / (0.1 * (3 + 2 * r) + 0.01) for r in range(3)]  # calls 3–8 are timed
    assert rec["ratios"] == pytest.approx(expected) and rec["median"] == pytest.approx(np.median(expected))
    assert (rec["min"], rec["max"]) == pytest.approx((min(expected), max(expected)))
    assert rec["times"]["FedAvg"][0] == pytest.approx([0.3, 0.31, 0.32])
    t = X.paired_timing_table(rec)
    assert t.ratio.tolist() == pytest.approx(expected) and t.repetition.tolist() == [0, 1, 2]
    assert t["FedAvg s/round"].tolist() == pytest.approx([0.31, 0.51, 0.71])
    assert set(t.setting) == {"patho(S=2)"} and set(t.seed) == {0} and set(t.rounds) == {3}
    with pytest.raises(ValueError, match="as many repetitions"):
        X.paired_ratios({"A": [[1.0]], "B": []}, "A", "B")


def test_paired_timing_runs_alone_and_is_cached(tmp_path):
    """On the smoke profile: every repetition times its rounds (local training plus aggregation, positive), the record
    is cached like any job and read back, not recomputed."""
    t2, _ = _smoke_table2()
    job = X.paired_timing_job(t2)
    (rec,) = execute([job], Serial(), root=tmp_path, progress=False)
    assert rec["order"] == [[0, "FedAvg"], [0, "FedFac dynamic"], [1, "FedAvg"], [1, "FedFac dynamic"]]
    assert all(len(times) == 2 and all(len(r) == 1 and r[0] > 0 for r in times) for times in rec["times"].values())
    assert rec["ratios"] == pytest.approx(X.paired_ratios(rec["times"], *PAIR))
    assert job.path(tmp_path).exists()
    (again,) = execute([job], Serial(), root=tmp_path, progress=False)
    assert again["ratios"] == rec["ratios"] and again["order"] == rec["order"]
