"""Equal tuning budgets (``Tune``): every arm's learning rate, and an arm's key hyperparameter, chosen on the mean best
validation accuracy over tuning seeds that are not verdict seeds; the verdict runs use the choice; the claims' notes
record the grid and the choice."""

from __future__ import annotations

import pytest

from pflnb.experiments import claims as R
from pflnb.experiments import profile_config, run
from pflnb.experiments.paper import (
    EDGE_STEPS,
    KEY_GRIDS,
    TUNING_SEEDS,
    Arm,
    Compare,
    Derived,
    Experiment,
    Paper,
    Tune,
    best_on_validation,
    decide,
    excluded,
    lr_tuning,
    run_experiment,
    tuning_score,
    tuning_summary,
)

LRS = (0.003, 0.3)
MUS = (0.0, 1.0)
TUNE = Tune(
    grid={"lr": {"smoke": LRS}},
    seeds={"smoke": [7, 8]},
    keys={"FedProx": {"mu": {"smoke": MUS}}},
    paper={"FedProx": "lr 0.01, μ 0.01"},
)
BASE = {"rounds": 2, "model": "tiny-bn-cnn"}
TOY = Paper(
    "toy",
    "tuned toy",
    (
        Experiment(
            "main",
            "FedAvg against FedProx, both tuned",
            "digits5-lite",
            (Arm("FedAvg", "fedavg"), Arm("FedProx", "fedprox")),
            {"smoke": [0]},
            {"smoke": BASE},
            tune=TUNE,
        ),
    ),
    (Compare("FedProx beats FedAvg", "+1 point", experiment="main", arm="FedProx", other="FedAvg"),),
)


def test_best_on_validation_takes_the_first_of_equal_scores():
    assert best_on_validation([0.5, 0.7, 0.7, 0.1]) == 1
    assert best_on_validation([0.9]) == 0
    with pytest.raises(ValueError):
        best_on_validation([])


def test_a_diverged_tuning_run_is_never_chosen():
    """A run that diverged is recorded without a summary: it scores −∞, so its candidate loses to any that finished
    (also after the mean over tuning seeds)."""
    finished = {"status": "ok", "summary": {"best_val_acc": 0.12}}
    diverged = {"status": "diverged", "divergence": {"round": 121}}
    assert tuning_score(finished) == 0.12 and tuning_score(diverged) == float("-inf")
    assert best_on_validation([tuning_score(diverged), tuning_score(finished)]) == 1
    assert best_on_validation([(tuning_score(diverged) + 0.9) / 2, 0.01]) == 1


def test_a_collapsed_tuning_run_rules_its_candidate_out():
    """Below the floor (a fraction here: chance + 5 points) at its best or at its last evaluation, a run collapsed:
    it scores −∞, so the mean over the tuning seeds of a rate at which any seed collapsed never wins."""
    floor = 0.15
    trained = {"summary": {"best_val_acc": 0.60}, "evals": [{"val_acc": [0.3, 0.3]}, {"val_acc": [0.5, 0.6]}]}
    never = {"summary": {"best_val_acc": 0.12}, "evals": [{"val_acc": [0.12, 0.12]}]}
    fell = {"summary": {"best_val_acc": 0.80}, "evals": [{"val_acc": [0.8, 0.8]}, {"val_acc": [0.0, 0.2]}]}  # to chance
    assert excluded(trained, floor) == "" and tuning_score(trained, floor) == 0.60
    assert excluded(never, floor).startswith("collapsed (best validation 12.0 %")
    assert excluded(fell, floor) == "collapsed (best validation 80.0 %, last 10.0 %)"
    assert tuning_score(fell, floor) == tuning_score(never, floor) == float("-inf")
    assert tuning_score(fell) == 0.80 and excluded(fell) == ""  # without a floor only divergence rules out
    # the better rate on one seed, collapsed on the other, loses to a steady one
    rates = [(tuning_score(fell, floor) + tuning_score(trained, floor)) / 2, (0.5 + 0.5) / 2]
    assert best_on_validation(rates) == 1


def test_every_choice_is_made_on_two_tuning_seeds():
    tune = lr_tuning((0.01, 0.1))
    assert len(TUNING_SEEDS) == 2 and all(list(tune.seeds[p]) == list(TUNING_SEEDS) for p in ("cpu", "paper"))


def test_an_arm_that_makes_plain_gradient_steps_runs_and_is_tuned_as_plain_sgd():
    """Per-FedAvg and pFedMe make their own plain gradient steps: in an experiment on Adam they run as plain SGD (the
    config says what runs, and no warning says the optimizer is unused) and are tuned on SGD's grid, not Adam's."""
    import warnings

    from pflnb.experiments.paper import ADAM_LRS, SGD_LRS

    fields = {"smoke": {**BASE, "optimizer": "adam"}}
    arms = (Arm("FedAvg", "fedavg"), Arm("Per-FedAvg", "per-fedavg"), Arm("pFedMe", "pfedme"))
    exp = Experiment("adam", "", "digits5-lite", arms, {"smoke": [0]}, fields, tune=lr_tuning(ADAM_LRS, profiles=("smoke",)))
    assert [exp.arm_optimizer(a.label, "smoke") for a in arms] == [None, "sgd", "sgd"]
    by_arm = {}
    for lab, cfg in exp.tuning_runs("smoke"):
        by_arm.setdefault(lab["label"], []).append(cfg)
    assert sorted({c.lr for c in by_arm["FedAvg"]}) == list(ADAM_LRS) and {c.optimizer for c in by_arm["FedAvg"]} == {"adam"}
    for label in ("Per-FedAvg", "pFedMe"):
        assert sorted({c.lr for c in by_arm[label]}) == list(SGD_LRS)
        assert {(c.optimizer, c.momentum, c.weight_decay) for c in by_arm[label]} == {("sgd", 0.0, 0.0)}
    assert "Per-FedAvg (sgd) lr ∈ {0.01, 0.05, 0.1}" in exp.tune.described(
        [a.label for a in arms], "smoke", [a.method for a in arms], [exp.arm_optimizer(a.label, "smoke") for a in arms]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "the configured optimizer (adam ...) is not used" would raise here
        run(by_arm["Per-FedAvg"][0].replace(rounds=1), progress=False, cache=False)
    # on plain SGD the experiment's own grid serves every arm
    sgd = Experiment(
        "sgd", "", "digits5-lite", arms, {"smoke": [0]}, {"smoke": BASE}, tune=lr_tuning((0.2, 0.4), profiles=("smoke",))
    )
    assert exp.arm_optimizer("Per-FedAvg", "smoke") == "sgd" and sgd.arm_optimizer("Per-FedAvg", "smoke") is None
    assert {c.lr for lab, c in sgd.tuning_runs("smoke") if lab["label"] == "Per-FedAvg"} == {0.2, 0.4}


def test_candidates_are_the_shared_grid_times_the_arms_key():
    assert TUNE.candidates("FedAvg", "smoke") == [({"lr": 0.003}, {}), ({"lr": 0.3}, {})]
    assert TUNE.candidates("FedProx", "smoke") == [({"lr": lr}, {"mu": mu}) for lr in LRS for mu in MUS]
    assert TUNE.candidates("FedAvg", "cpu") == []


def test_method_keys_tune_every_arm_of_that_method_and_an_arms_own_key_wins():
    tune = lr_tuning((0.01, 0.1), profiles=("cpu",))
    assert tune.candidates("FedAvg", "cpu", "fedavg") == [({"lr": 0.01}, {}), ({"lr": 0.1}, {})]
    mus, lams = KEY_GRIDS["fedprox"]["mu"], KEY_GRIDS["ditto"]["lam"]
    assert 0.01 in mus and 0.1 in lams  # the package's defaults are candidates
    assert tune.candidates("any label", "cpu", "fedprox") == [({"lr": lr}, {"mu": m}) for lr in (0.01, 0.1) for m in mus]
    assert tune.candidates("ditto", "cpu", "ditto") == [({"lr": lr}, {"lam": v}) for lr in (0.01, 0.1) for v in lams]
    assert tune.candidates("FedProx", "smoke", "fedprox") == []  # no tuning at a profile without a grid
    own = Tune(grid=tune.grid, seeds=tune.seeds, methods=tune.methods, keys={"P": {"mu": {"cpu": (0.5,)}}})
    assert own.candidates("P", "cpu", "fedprox") == [({"lr": 0.01}, {"mu": 0.5}), ({"lr": 0.1}, {"mu": 0.5})]
    words = tune.described(["FedAvg", "FedProx"], "cpu", ["fedavg", "fedprox"])
    assert words == "lr ∈ {0.01, 0.1}; FedProx mu ∈ {" + ", ".join(str(m) for m in mus) + "}"


def test_tuning_seeds_never_verdict_seeds():
    with pytest.raises(ValueError, match="tuning seeds \\[0\\] are verdict seeds"):
        Experiment("x", "", "digits5-lite", (Arm("A", "fedavg"),), {"smoke": [0, 1]}, tune=Tune(seeds={"smoke": [0]}))
    with pytest.raises(KeyError, match="no arm 'Ditto'"):
        Experiment("x", "", "digits5-lite", (Arm("A", "fedavg"),), {"smoke": [0]}, tune=Tune(keys={"Ditto": {}}))
    with pytest.raises(ValueError, match="include the tuning seeds"):
        run_experiment(TOY, "main", "smoke", seeds=[7], progress=False)


def test_a_tuned_lr_reaches_every_arm_per_fedavg_steps_included():
    """Per-FedAvg's α and β replace the learning rate when set: an arm that fixes them under an lr grid is refused
    (pMixFed's Table 1 fixed them at 1e-3, so its tuned lr never reached Per-FedAvg, which stayed near chance)."""
    from types import SimpleNamespace

    from pflnb.algorithms import make_algorithm
    from pflnb.fl import OptimConfig

    tune = lr_tuning((0.01, 0.1), profiles=("cpu",))
    fixed = Arm("Per-FedAvg", "per-fedavg", {"alpha": 1e-3, "beta": 1e-3})
    with pytest.raises(ValueError, match="fixes \\['alpha', 'beta'\\] at 'cpu'"):
        Experiment("x", "", "digits5-lite", (fixed,), {"cpu": [0]}, tune=tune)
    with pytest.raises(ValueError, match="fixes \\['beta'\\]"):
        Experiment("x", "", "digits5-lite", (Arm("P", "per-fedavg", at={"cpu": {"beta": 0.5}}),), {"cpu": [0]}, tune=tune)
    Experiment("x", "", "digits5-lite", (fixed,), {"cpu": [0]})  # no lr grid: fixed steps are the arm's own choice
    Experiment("x", "", "digits5-lite", (Arm("Per-FedAvg", "per-fedavg"),), {"cpu": [0]}, tune=tune)
    algo = make_algorithm("per-fedavg")  # unset, both steps follow each candidate's lr
    for lr in (0.01, 0.1):
        assert algo._steps(SimpleNamespace(optim=OptimConfig(lr=lr))) == (lr, lr)


def test_an_arm_paired_with_another_takes_its_choice_untuned(tmp_path, monkeypatch):
    """Tune.shared: the shocked arm of a pair runs at the choice of its unshocked twin (pMixFed's Fig. 4 pair had been
    tuned apart, at 3e-3 and 0.009); it has no tuning runs, and the note says whose choice it took."""
    monkeypatch.setenv("PFLNB_RESULTS", str(tmp_path))
    shared = Tune(grid=TUNE.grid, seeds=TUNE.seeds, shared={"FedProx μ=1": "FedAvg"})
    arms = (Arm("FedAvg", "fedavg"), Arm("FedProx μ=1", "fedprox", {"mu": 1.0}))
    exp = Experiment("pair", "", "digits5-lite", arms, {"smoke": [0]}, {"smoke": BASE}, tune=shared)
    paper = Paper(
        "toy", "", (exp,), (Compare("FedAvg beats FedProx μ=1", "", experiment="pair", arm="FedAvg", other="FedProx μ=1"),)
    )
    res = run_experiment(paper, "pair", "smoke", progress=False)
    assert set(res.tuning.label) == {"FedAvg"}  # the paired arm is not tuned
    chosen = float(res.tuning[res.tuning.chosen].iloc[0]["tuned:lr"])
    by_label = dict(zip(res.table.label, res.records))
    assert by_label["FedAvg"]["config"]["lr"] == by_label["FedProx μ=1"]["config"]["lr"] == chosen
    assert by_label["FedProx μ=1"]["config"]["method_params"] == {"mu": 1.0}
    assert res.tuned("FedProx μ=1") == f"lr={chosen} (the choice of FedAvg)"
    (claim,) = decide(paper, {"pair": res})
    assert f"FedProx μ=1 lr={chosen} (the choice of FedAvg)" in claim.note
    with pytest.raises(ValueError, match="takes 'FedAvg'"):  # a paired arm tunes no keys of its own
        Experiment(
            "x", "", "digits5-lite", arms, {"smoke": [0]}, tune=Tune(shared={"FedProx μ=1": "FedAvg"}, keys={"FedProx μ=1": {}})
        )
    with pytest.raises(KeyError, match="no arm 'Local'"):
        Experiment("x", "", "digits5-lite", arms, {"smoke": [0]}, tune=Tune(shared={"FedProx μ=1": "Local"}))


def test_each_arm_runs_with_its_choice_on_validation(tmp_path, monkeypatch):
    monkeypatch.setenv("PFLNB_RESULTS", str(tmp_path))
    res = run_experiment(TOY, "main", "smoke", progress=False)
    base = profile_config("smoke", "digits5-lite", **BASE)

    # the expected choices, from the tuning runs' validation accuracy alone (first candidate on ties; a run below the
    # floor, chance + 5 points, at its best or its last evaluation rules its candidate out), with the grid-edge rule
    # played out by hand: while the chosen lr is the smallest (largest) tried, try lr²/neighbour one step beyond, at
    # most EDGE_STEPS times per side, never from a cell none of whose candidates trained (μ ∈ {0, 1} holds a 0: no
    # geometric step, never extended)
    def one(method: str, lr: float, seed: int, mu: float | None) -> float:
        cfg = base.replace(method=method, lr=lr, seed=seed, method_params={} if mu is None else {"mu": mu})
        record = run(cfg, progress=False)
        last, best = sum(record["evals"][-1]["val_acc"]) / len(record["evals"][-1]["val_acc"]), record["summary"]["best_val_acc"]
        return float("-inf") if min(last, best) < R.Floor(0.1).points / 100 else best

    def choose(method: str, candidates: list[tuple[float, float | None]]) -> tuple[tuple[float, float | None], int]:
        score = lambda lr, mu: sum(one(method, lr, s, mu) for s in (7, 8)) / 2  # noqa: E731
        scores = {c: score(*c) for c in candidates}
        taken = {"below": 0, "above": 0}
        while True:
            tried = list(scores)
            best = max(tried, key=lambda c: (scores[c], -tried.index(c)))
            lrs = sorted({lr for lr, _ in tried})
            side = "below" if best[0] == lrs[0] else "above" if best[0] == lrs[-1] else None
            if side is None or taken[side] == EDGE_STEPS or scores[best] == float("-inf"):
                return best, len(scores)
            taken[side] += 1
            nxt = float(f"{(lrs[0] ** 2 / lrs[1] if side == 'below' else lrs[-1] ** 2 / lrs[-2]):.3g}")
            scores[(nxt, best[1])] = score(nxt, best[1])

    (want_avg, _), n_avg = choose("fedavg", [(lr, None) for lr in LRS])
    want_prox, n_prox = choose("fedprox", [(lr, mu) for lr in LRS for mu in MUS])

    assert len(res.tuning) == 2 * (n_avg + n_prox) and set(res.tuning.seed) == {7, 8}
    assert sorted(res.table.seed) == [0, 0]  # verdict runs on the verdict seed only
    by_label = dict(zip(res.table.label, res.records))
    assert by_label["FedAvg"]["config"]["lr"] == want_avg
    assert (by_label["FedProx"]["config"]["lr"], by_label["FedProx"]["config"]["method_params"]["mu"]) == want_prox
    assert (
        by_label["FedProx"]["key"]
        == base.replace(method="fedprox", lr=want_prox[0], seed=0, method_params={"mu": want_prox[1]}).key()
    )

    (claim,) = decide(TOY, {"main": res})
    assert "seed(s) 7 8" in claim.note and "lr ∈ {0.003, 0.3}" in claim.note and "FedProx mu ∈ {0.0, 1.0}" in claim.note
    assert f"FedAvg lr={want_avg}" in claim.note
    assert f"FedProx lr={want_prox[0]}, mu={want_prox[1]} (paper: lr 0.01, μ 0.01)" in claim.note

    # a Derived rule names no experiment: the note covers every tuned arm of the experiments it read
    def reads_main(results):
        return R.value({0: results["main"].values("FedAvg")[0]}, 0.5, 1.0), [0]

    def reads_nothing(results):
        return R.value({0: 0.5}, 0.5, 1.0), [0]

    derived = Paper("toy", "", TOY.experiments, (Derived("d", "p", reads_main), Derived("e", "p", reads_nothing)))
    read, unread = decide(derived, {"main": res})
    assert "main tuned on" in read.note and f"FedAvg lr={want_avg}" in read.note and "FedProx lr=" in read.note
    assert unread.note == ""


def test_without_tuning_seeds_the_arms_run_as_declared():
    exp = TOY.experiments[0]
    assert exp.tuning_runs("cpu") == []
    plain = Experiment("p", "", "digits5-lite", exp.arms, {"smoke": [0]}, {"smoke": BASE})
    assert [c.key() for _, c in exp.runs("smoke")] == [c.key() for _, c in plain.runs("smoke")]


def test_the_choice_reads_validation_never_test(monkeypatch):
    """Synthetic tuning records whose validation and test accuracies disagree: the choice follows validation."""
    import pflnb.experiments.tuning as P

    def fake_execute(experiment, runs, executor, progress, tuning=False, checkpoint_every=0):
        out = []
        for _, cfg in runs:
            good_val = cfg.lr == 0.003 and cfg.method_params.get("mu", 1.0) == 1.0
            out.append({"summary": {"best_val_acc": 0.9 if good_val else 0.5, "test_acc": 0.1 if good_val else 0.99}})
        return out

    monkeypatch.setattr(P, "_execute", fake_execute)
    table, choice = P._tune(TOY.experiments[0], "smoke", None, None, None, False)
    assert choice({"label": "FedAvg"}) == ({"lr": 0.003}, {})
    assert choice({"label": "FedProx"}) == ({"lr": 0.003}, {"mu": 1.0})
    assert table.chosen.sum() == 2 * 2  # one candidate per arm, on each of the two tuning seeds
    res = P.ExperimentResult(TOY.experiments[0], "smoke", table, [], table)
    summary = tuning_summary({"main": res, "theory": 1.0}).set_index("label")
    assert summary.loc["FedAvg", "chosen"] == "lr=0.003" and summary.loc["FedProx", "chosen"] == "lr=0.003, mu=1.0"
    # 0.003 was the grid's lower edge: the grid-edge rule tried 0.003² / 0.3 = 3e-5 beyond it, which did worse
    assert summary.loc["FedAvg", "validation accuracy (%)"] == "lr=0.003: 90.0 · lr=0.3: 50.0 · lr=3e-05: 50.0"


def test_the_grid_edge_rule_extends_every_arms_grid_until_interior_or_capped(monkeypatch):
    """Validation accuracy that keeps rising as the lr falls: the rule steps below the grid EDGE_STEPS times (the cap)
    and stops there; one that peaks one step beyond: it stops at the interior choice; counts of arms at an edge
    before/after."""
    import pflnb.experiments.tuning as P

    def fake_execute(experiment, runs, executor, progress, tuning=False, checkpoint_every=0):
        out = []
        for _, cfg in runs:
            if cfg.method == "fedavg":  # monotone: smaller is better, without end
                score = 1.0 - cfg.lr
            else:  # FedProx: peaks at 3e-5 (one step below the grid), whatever μ
                score = {3e-05: 0.9, 0.003: 0.8}.get(cfg.lr, 0.1)
            out.append({"summary": {"best_val_acc": score, "test_acc": 0.5}})
        return out

    monkeypatch.setattr(P, "_execute", fake_execute)
    table, choice = P._tune(TOY.experiments[0], "smoke", None, None, None, False)
    steps = [float(f"{0.003 * 0.01**k:.3g}") for k in range(1, EDGE_STEPS + 1)]  # 3e-5, 3e-7, ...: 100× a step
    assert choice({"label": "FedAvg"}) == ({"lr": steps[-1]}, {})  # below the grid EDGE_STEPS times, then the cap
    assert choice({"label": "FedProx"}) == ({"lr": 3e-05}, {"mu": 0.0})  # interior after one step: 3e-7 did worse
    avg = table[table.label == "FedAvg"].drop_duplicates("candidate")
    assert avg["tuned:lr"].tolist() == [0.003, 0.3, *steps] and avg.step.tolist() == [0, 0, *range(1, EDGE_STEPS + 1)]
    assert P.edge_counts(table) == (2, 2, 1)  # 2 arms; both at an edge on the grid; FedAvg still there at the cap
    import pandas as pd

    edges = P.tuning_edges({"main": P.ExperimentResult(TOY.experiments[0], "smoke", pd.DataFrame(), [], table), "x": 1})
    got = edges[["experiment", "cell", "at edge on the grid", "at edge after the rule"]].values.tolist()
    assert got == [["main", "FedAvg", True, True], ["main", "FedProx", True, False]]
    assert edges.chosen.tolist() == [f"lr={steps[-1]}", "lr=3e-05, mu=0.0"]
    report = P.edge_report([TOY], "smoke", progress=False)  # the same account per tuned experiment (`pflnb tuning`)
    assert report.values.tolist() == [[TOY.name, TOY.experiments[0].name, 2, 2, 1]]
    assert P.beyond_edge([0.01, 0.05, 0.1], 0.1) == 0.2 and P.beyond_edge([0.01, 0.05, 0.1], 0.05) is None
    assert P.beyond_edge([3e-4, 1e-3, 3e-3], 3e-4) == 9e-05 and P.beyond_edge([0.0, 1.0], 0.0) is None


def test_a_cell_whose_every_candidate_collapsed_is_not_extended(monkeypatch):
    """No candidate trained on every seed: there is no edge to follow, so the grid is not extended; the choice is the
    first candidate and the table says why each run was ruled out."""
    import pflnb.experiments.tuning as P

    def fake_execute(experiment, runs, executor, progress, tuning=False, checkpoint_every=0):
        return [{"summary": {"best_val_acc": 0.11, "test_acc": 0.5}, "evals": [{"val_acc": [0.11]}]} for _ in runs]

    monkeypatch.setattr(P, "_execute", fake_execute)
    table, choice = P._tune(TOY.experiments[0], "smoke", None, None, None, False)
    assert choice({"label": "FedAvg"}) == ({"lr": LRS[0]}, {})
    assert sorted(set(table[table.label == "FedAvg"]["tuned:lr"])) == sorted(LRS) and set(table.step) == {0}
    assert set(table.excluded) == {"collapsed (best validation 11.0 %, last 11.0 %)"}
    res = P.ExperimentResult(TOY.experiments[0], "smoke", table.iloc[:0], [], table)
    edges = P.tuning_edges({"main": res}).set_index("cell")  # never extended: no edge to report, but said so
    assert (
        edges["no value trained"].all() and not edges["at edge on the grid"].any() and not edges["at edge after the rule"].any()
    )


def test_a_collapsed_verdict_seed_is_reported_in_the_claim_not_averaged_in_silently():
    """A Compare claim over verdict runs, one of which fell to chance by its end: the claim's numbers name that seed
    (the floor is chance 10 % + 5 points), and a claim whose runs all trained says nothing of collapse."""
    import pandas as pd

    import pflnb.experiments.tuning as P

    def record(seed, best, last, test):
        return {"summary": {"best_val_acc": best, "test_acc": test}, "evals": [{"val_acc": [best]}, {"val_acc": [last]}]}

    exp = TOY.experiments[0]
    rows = [("FedAvg", s, 0.6 + 0.01 * s) for s in range(3)] + [("FedProx", s, 0.7 + 0.01 * s) for s in range(3)]
    table = pd.DataFrame([{"label": lab, "seed": s, "test_acc": t} for lab, s, t in rows])
    records = [record(s, 0.8, 0.11 if (lab, s) == ("FedProx", 2) else 0.8, t) for lab, s, t in rows]
    (claim,) = decide(TOY, {"main": P.ExperimentResult(exp, "smoke", table, records)})
    assert "collapsed verdict seed(s): FedProx seed 2 (collapsed (best validation 80.0 %, last 11.0 %))" in claim.outcome.ours
    assert claim.verdict == R.REPRODUCED  # the seed stays in the interval: reported, not dropped
    fine = [record(s, 0.8, 0.8, t) for lab, s, t in rows]
    (clean,) = decide(TOY, {"main": P.ExperimentResult(exp, "smoke", table, fine)})
    assert "collapsed" not in clean.outcome.ours


def test_a_comparison_with_an_arm_whose_tuning_found_no_trainable_value_is_not_testable():
    """An arm each of whose tuning candidates diverged or collapsed on some tuning seed runs its first value, not a
    choice: its verdict runs may clear the floor by chance, but a comparison with it says nothing of the methods, so
    the rule reads it as an arm that did not train. One candidate that trained on every seed makes it tuned again."""
    import math

    import pandas as pd

    import pflnb.experiments.tuning as P

    def record(seed, test):
        return {"summary": {"best_val_acc": 0.8, "test_acc": test}, "evals": [{"val_acc": [0.8]}]}

    exp = TOY.experiments[0]
    rows = [("FedAvg", s, 0.3 + 0.01 * s) for s in range(3)] + [("FedProx", s, 0.7 + 0.01 * s) for s in range(3)]
    table = pd.DataFrame([{"label": lab, "seed": s, "test_acc": t} for lab, s, t in rows])
    records = [record(s, t) for _, s, t in rows]

    def tuning(fedavg_scores):  # FedAvg's candidates 0 and 1 on tuning seeds 100 and 101; FedProx trains at both
        out = []
        for label, scores in (("FedAvg", fedavg_scores), ("FedProx", [[0.7, 0.7], [0.6, 0.6]])):
            for k, per_seed in enumerate(scores):
                out += [
                    {
                        "label": label,
                        "seed": 100 + i,
                        "candidate": k,
                        "tuned:lr": [0.01, 0.1][k],
                        "best_val_acc": v,
                        "chosen": k == 0,
                        "step": 0,
                    }
                    for i, v in enumerate(per_seed)
                ]
        return pd.DataFrame(out)

    # every candidate has a failed tuning seed (0: seed 101 collapsed; 1: seed 100 diverged): no value trained
    untrained = P.ExperimentResult(exp, "smoke", table, records, tuning([[0.5, -math.inf], [-math.inf, 0.5]]))
    assert "FedAvg: every value tried diverged or collapsed" == untrained.untuned("FedAvg")
    assert untrained.untuned("FedProx") == "" and isinstance(untrained.values("FedAvg"), R.Untuned)
    (claim,) = decide(TOY, {"main": untrained})
    assert claim.verdict == R.NOT_TESTABLE and "FedAvg had no value that trained on the tuning seeds" in claim.label
    # candidate 0 trained on both seeds: FedAvg is tuned, its 30 % clears the floor, and the claim is decided
    tuned = P.ExperimentResult(exp, "smoke", table, records, tuning([[0.5, 0.5], [-math.inf, 0.5]]))
    assert tuned.untuned("FedAvg") == "" and type(tuned.values("FedAvg")) is dict
    (claim,) = decide(TOY, {"main": tuned})
    assert claim.verdict == R.REPRODUCED
    with R.floor(None):  # a rule without a floor (a claim about the failure itself) reads the values as they are
        assert R.did_not_train("FedAvg", untrained.values("FedAvg")) == ""


def test_run_experiment_marks_the_untuned_arms_runs_and_a_papers_own_helper_passes_the_mark_on(monkeypatch):
    """FedAvg's tuning runs all diverge (every lr is ruled out): ``run_experiment`` marks each of its verdict runs
    (table column and record), FedProx's stay unmarked, and a paper's own per-seed helper (FedFac's ``by_seed``)
    returns the mark to the floor rule, so a comparison read through it is not testable."""
    import pflnb.experiments.tuning as P
    from pflnb.papers.fedfac.claims import by_seed

    def fake_execute(experiment, runs, executor, progress, tuning=False, checkpoint_every=0):
        out = []
        for lab, cfg in runs:
            if tuning and lab["label"] == "FedAvg":
                out.append({"status": "diverged", "summary": {}})
            else:
                acc = 0.3 if lab["label"] == "FedAvg" else 0.7
                config = {"method": cfg.method, "dataset": cfg.dataset, "seed": cfg.seed, "method_params": {}}
                out.append({"summary": {"best_val_acc": acc, "test_acc": acc}, "evals": [{"val_acc": [acc]}], "config": config})
        return out

    monkeypatch.setattr(P, "_execute", fake_execute)
    res = P.run_experiment(TOY, "main", "smoke", progress=False)
    marks = dict(zip(res.table["label"], res.table["untuned"]))
    assert marks["FedAvg"].startswith("FedAvg") and marks["FedProx"] == ""
    assert [r.get("untuned", "") != "" for r in res.records] == [lab == "FedAvg" for lab in res.table["label"]]
    fedavg = by_seed(res.table, "test_acc", label="FedAvg")
    assert isinstance(fedavg, R.Untuned) and type(by_seed(res.table, "test_acc", label="FedProx")) is dict
    with R.floor(R.Floor(0.1)):
        out = R.compare(by_seed(res.table, "test_acc", label="FedProx"), fedavg, names=("FedProx", "FedAvg"))
    assert out.verdict == R.NOT_TESTABLE and "FedAvg had no value that trained" in out.detail
