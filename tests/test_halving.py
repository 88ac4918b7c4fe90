"""Successive halving measured on the full grid's runs (pflnb.experiments.halving): the budget rule, the score of a run
cut short read from the full run, the chooser's rungs, the tuning under a chooser, and the report."""

from __future__ import annotations

import math

import pytest

import pflnb.experiments.tuning as P
from pflnb.experiments import profile_config, run
from pflnb.experiments.halving import Grid, Halving, NotInCache, halving_report, rung_budgets, runs_needed, score_at
from pflnb.experiments.paper import Arm, Compare, Experiment, Paper, Tune


def _record(vals: list[float], rounds: int | None = None, every: int = 1, diverged_at: int | None = None, wall: float = 9.0):
    """A tuning record whose evaluations (rounds every, 2·every, …) have these mean validation accuracies."""
    evals = [{"round": every * (i + 1), "val_acc": [v - 0.1, v + 0.1], "test_acc": [0.0, 0.0]} for i, v in enumerate(vals)]
    rounds = rounds or every * len(vals)
    rec = {"config": {"rounds": rounds, "eval_every": every}, "evals": evals, "wall_time_s": wall}
    if diverged_at is not None:
        rec.update(status="diverged", divergence={"round": diverged_at})
    else:
        rec.update(status="finished", summary={"best_val_acc": max(vals)})
    return rec


def test_rung_budgets_end_at_a_third_of_the_budget_on_the_evaluation_rounds():
    assert rung_budgets(3, 30) == [10]  # one rung: 3 candidates at R/3, the best one chosen
    assert rung_budgets(9, 90) == [10, 30]  # R/9 for nine, R/3 for the best three
    assert rung_budgets(4, 90) == [10, 30]  # ⌈log₃ 4⌉ = 2 rungs
    assert rung_budgets(5, 16) == [2, 6]  # 16/9 → 2, 16/3 → 6
    assert rung_budgets(5, 16, every=4) == [4, 8]  # rounded up to the evaluation rounds
    assert rung_budgets(5, 40, every=40) == [40, 40]  # evaluated only at the end: nothing can be cut
    assert rung_budgets(2, 30, eta=2) == [15]
    assert rung_budgets(1, 30) == []
    with pytest.raises(ValueError, match="eta >= 2"):
        rung_budgets(3, 30, eta=1)


def test_a_run_cut_short_scores_its_best_validation_up_to_the_budget():
    rec = _record([0.5, 0.8, 0.6, 0.9])
    assert score_at(rec, 1) == pytest.approx(0.5)
    assert score_at(rec, 3) == pytest.approx(0.8)  # the best so far, not the last
    assert score_at(rec, 4) == pytest.approx(0.9) == rec["summary"]["best_val_acc"]
    late = _record([0.5, 0.7], rounds=4, diverged_at=3)  # diverged at round 3: fine when cut at round 2
    assert score_at(late, 2) == pytest.approx(0.7) and score_at(late, 3) == -math.inf
    with pytest.raises(ValueError, match="no evaluation up to round 1"):
        score_at(_record([0.5, 0.7], every=2), 1)


def test_halving_keeps_the_best_third_at_each_rung_and_chooses_on_the_short_runs():
    # three candidates, R = 9: one rung at round 3, where candidate 1 leads; candidate 0 leads at round 9
    three = [
        [_record([0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99])],
        [_record([0.6, 0.7, 0.8] + [0.8] * 6)],
        [_record([0.1] * 9)],
    ]
    halving, grid = Halving(), Grid()
    assert grid(("c",), three) == 0 and halving(("c",), three) == 1
    assert halving.runs[("c",)] == {0: [3], 1: [3], 2: [3]}
    # nine candidates, R = 9: rungs at rounds 1 and 3. At round 1 candidates 2, 5 and 7 lead; at round 3 candidate 0
    # is the best of all, but it was dropped at round 1; of the three kept, 7 is best at round 3
    first = {2: 0.6, 5: 0.7, 7: 0.5}
    at3 = {0: 0.99, 2: 0.55, 5: 0.6, 7: 0.75}  # best so far: 5 keeps its 0.7 of round 1
    nine = [[_record([first.get(k, 0.2), 0.2, at3.get(k, 0.2)] + [0.2] * 6)] for k in range(9)]
    halving = Halving()
    assert halving(("c",), nine) == 7
    assert halving.runs[("c",)] == {k: ([1, 3] if k in (2, 5, 7) else [1]) for k in range(9)}
    ties = [[_record([0.5] * 9)] for _ in range(3)]
    assert Halving()(("c",), ties) == 0  # the first on ties, as the grid
    diverged = [[_record([0.9] * 2, rounds=9, diverged_at=3)], [_record([0.4] * 9)], [_record([0.3] * 9)]]
    assert Halving()(("c",), diverged) == 1  # diverged by round 3: −∞


LRS = (0.003, 0.03, 0.3)
TOY = Paper(
    "toy",
    "",
    (
        Experiment(
            "main",
            "",
            "digits5-lite",
            (Arm("FedAvg", "fedavg"), Arm("Local", "local")),
            {"smoke": [0]},
            {"smoke": {"rounds": 9}},
            tune=Tune(grid={"lr": {"smoke": LRS}}, seeds={"smoke": [7]}),
        ),
    ),
    (Compare("FedAvg beats Local", "", experiment="main", arm="FedAvg", other="Local"),),
)


def _fake(curves, cached=None):
    """An ``_execute`` giving records with these validation curves per (method, lr); NotInCache for an lr not in
    ``cached`` (as the cache-only executor)."""

    def fake_execute(experiment, runs, executor, progress, tuning=False, checkpoint_every=0):
        missing = [cfg for _, cfg in runs if cached is not None and cfg.lr not in cached]
        if missing:
            raise NotInCache(missing)
        return [_record(curves(cfg.method, cfg.lr)) for _, cfg in runs]

    return fake_execute


def test_tuning_under_a_chooser_follows_it_and_the_grid_chooser_restates_the_grid(monkeypatch):
    # FedAvg: lr 0.03 is best after 9 rounds, 0.3 after 3; Local: 0.03 best throughout
    def curves(method, lr):
        if method == "fedavg":
            return {0.03: [0.2, 0.3, 0.4] + [0.9] * 6, 0.3: [0.5, 0.6, 0.7] + [0.7] * 6}.get(lr, [0.1] * 9)
        return [0.8] * 9 if lr == 0.03 else [0.1] * 9

    monkeypatch.setattr(P, "_execute", _fake(curves))
    exp = TOY.experiments[0]
    table, choice = P.tune_experiment(exp, "smoke", progress=False)
    assert choice({"label": "FedAvg"}) == ({"lr": 0.03}, {}) and choice({"label": "Local"}) == ({"lr": 0.03}, {})
    grid_table, _ = P.tune_experiment(exp, "smoke", progress=False, chooser=Grid())
    assert grid_table.equals(table)
    halving = Halving()
    halved, choice = P.tune_experiment(exp, "smoke", progress=False, chooser=halving)
    # halving chose 0.3 for FedAvg, the grid's upper edge: the grid-edge rule tried 0.3²/0.03 = 3 beyond it (worse)
    assert choice({"label": "FedAvg"}) == ({"lr": 0.3}, {}) and choice({"label": "Local"}) == ({"lr": 0.03}, {})
    assert halved[halved.label == "FedAvg"]["tuned:lr"].tolist() == [0.003, 0.03, 0.3, 3.0]
    # first pass: 3 candidates, one rung at round 3; second pass: 4 candidates, rungs at rounds 1 and 3 (0.3 and 0.03 kept)
    assert halving.runs[("FedAvg",)] == {0: [3, 1], 1: [3, 1, 3], 2: [3, 1, 3], 3: [1]}


def test_the_report_lists_each_cell_both_ways_and_an_experiment_needing_runs_the_grid_never_made(monkeypatch):
    def curves(method, lr):
        if method == "fedavg":
            return {0.03: [0.2, 0.3, 0.4] + [0.9] * 6, 0.3: [0.5, 0.6, 0.7] + [0.7] * 6}.get(lr, [0.1] * 9)
        return [0.8] * 9 if lr == 0.03 else [0.1] * 9

    monkeypatch.setattr(P, "_execute", _fake(curves, cached={*LRS, 3.0}))
    report = halving_report([TOY], "smoke").set_index("cell")
    avg, loc = report.loc["FedAvg"], report.loc["Local"]
    assert (avg["grid choice"], avg["halving choice"], bool(avg["same"])) == ("lr=0.03", "lr=0.3", False)
    assert (avg["val of grid choice (%)"], avg["val of halving choice (%)"]) == (90.0, 70.0)  # at the full 9 rounds
    assert (loc["grid choice"], loc["halving choice"], bool(loc["same"])) == ("lr=0.03", "lr=0.03", True)
    # the grid: 3 runs of 9 rounds; halving: 3 runs of 3 rounds, whose first round also scores rung 1 of the second
    # pass, and one run of 1 round for lr 3
    assert avg["grid rounds"] == 3 * 9 and avg["halving rounds"] == 3 * 3 + 1
    assert loc["grid rounds"] == 3 * 9 and loc["halving rounds"] == 3 * 3
    assert avg["grid s"] == pytest.approx(3 * 9.0) and avg["halving s"] == pytest.approx(9.0 * 10 / 9)
    assert runs_needed([3, 1, 3]) == [3] and runs_needed([1, 3, 1, 9]) == [1, 3, 9]
    monkeypatch.setattr(P, "_execute", _fake(curves, cached=set(LRS)))  # lr 3 was never run by the grid
    (row,) = halving_report([TOY], "smoke").to_dict("records")
    assert row["cell"] == "halving needs 1 run(s) the grid did not make"


@pytest.mark.parametrize(
    "method,changes",
    [("fedavg", {"lr_decay": 0.8, "participation": 0.6}), ("pmixfed", {}), ("lgmix", {})],
)
def test_a_run_cut_short_is_the_full_run_up_to_its_last_round(tmp_path, monkeypatch, method, changes):
    """What makes the measurement exact: nothing in a run's first rounds reads how many rounds follow."""
    monkeypatch.setenv("PFLNB_RESULTS", str(tmp_path))
    cfg = profile_config("smoke", "digits5-lite", method=method, rounds=4, **changes)
    full = run(cfg, progress=False)
    short = run(cfg.replace(rounds=2), progress=False)
    assert [e["val_acc"] for e in short["evals"]] == [e["val_acc"] for e in full["evals"][:2]]
    assert score_at(full, 2) == short["summary"]["best_val_acc"]
