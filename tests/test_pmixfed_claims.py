"""pMixFed's declared claims decided on synthetic results with known verdicts, and the views behind them."""

import dataclasses

import numpy as np
import pandas as pd
import pytest

from pflnb.algorithms.pmixfed import mu_sigmoid
from pflnb.experiments.claims import CONTRADICTED, INCONCLUSIVE, NOT_RUN, NOT_TESTABLE, PARTIAL, REPRODUCED
from pflnb.experiments.paper import ExperimentResult, Item, Paper, _declared_runs, decide, write_coverage
from pflnb.papers.pmixfed import claims as C
from pflnb.papers.pmixfed import experiments as E
from pflnb.papers.pmixfed import ledger as LEDGER
from pflnb.papers.pmixfed import mixup as M
from pflnb.papers.pmixfed import paper as PAPER_MODULE
from pflnb.papers.pmixfed.cells import TABLE1_CELLS
from pflnb.papers.pmixfed.paper import PAPER

SEEDS = (0, 1, 2)
LR = {"e1_max": 4e-16, "paper_min_off_half": 0.05}
FP = {"ema_err_0.0": 1e-16, "ema_err_0.5": 2e-16, "ema_err_0.9": 3e-16, "fp_gap_0.9": 5e-15, "drift": 0.3}
L1 = {"iso_max_gap": 1e-17, "ani_min_slack": 0.01, "floor": 0.0556, "noisy_last": 0.055, "clean_last": 1e-4}
MU_FACTS, BETA_FACTS = M.mu_curve_facts(), M.beta_shape_facts()  # Figs. 8 and 7, exact


def _cells(name, by_cell, seeds=SEEDS):
    """A synthetic result of experiment ``name``: ``by_cell`` maps a (dataset, federation) cell to label → per-seed
    ``seen`` (the summary accuracy), optionally ``val`` (best validation accuracy; default ``seen``) and ``before`` /
    ``after`` (mean unseen accuracy) values."""
    rows, records = [], []
    for (dataset, setting), values in by_cell.items():
        for label, metrics in values.items():
            for i, s in enumerate(seeds):
                seen = metrics["seen"][i]
                val = metrics.get("val", metrics["seen"])[i]
                rows.append(
                    {
                        "label": label,
                        "dataset": dataset,
                        "setting": setting,
                        "seed": s,
                        "test_acc": seen,
                        "last_test_acc": seen,
                        "best_val_acc": val,
                    }
                )
                unseen = {w: [metrics[w][i]] for w in ("before", "after") if w in metrics}
                records.append({"label": label, "unseen": unseen, "summary": {"test_acc": seen, "best_val_acc": val}})
    return ExperimentResult(PAPER.experiment(name), "cpu", pd.DataFrame(rows), records)


def _result(name, values, seeds=SEEDS, dataset="fmnist", setting="N10"):
    return _cells(name, {(dataset, setting): values}, seeds)


def _pm(x):
    """pMixFed's three per-seed values around ``x``."""
    return [x, x + 0.01, x + 0.02]


def _other(y):
    """A baseline's three per-seed values around ``y`` (paired differences from :func:`_pm` vary by seed)."""
    return [y + 0.005, y, y + 0.02]


SEEN = {
    "pmixfed": [0.90, 0.85, 0.95],
    "pmixfed-dynamic": [0.80, 0.80, 0.80],
    "fedavg": [0.50, 0.51, 0.52],
    "fedsim": [0.92, 0.80, 0.96],
}
# (pMixFed, FedAvg, FedSim) mean unseen accuracy per cell and metric; pMixFed-Dynamic always 0.95, above all of them
TABLE1_MEANS = {
    ("fmnist", "N10"): {"before": (0.80, 0.70, 0.60), "after": (0.60, 0.55, 0.70)},  # held; FedSim ahead
    ("fmnist", "N100"): {"before": (0.50, 0.40, 0.30), "after": (0.70, 0.60, 0.50)},  # held; held
    ("digits5-lite", "N10"): {"before": (0.10, 0.30, 0.30), "after": (0.60, 0.50, 0.40)},  # pMixFed < floor; held
    ("digits5-lite", "N100"): {"before": (0.40, 0.30, 0.20), "after": (0.45, 0.45, 0.45)},  # held; a tie
}


def _table1(means=TABLE1_MEANS, dynamic=None):
    """The Table 1 runs of ``means``; ``dynamic``: (cell, metric) → pMixFed-Dynamic's mean unseen accuracy (its per-seed
    values as pMixFed's, :func:`_pm`), default 0.95 everywhere."""
    by_cell = {}
    for cell, metric in means.items():
        values = {label: {"seen": SEEN[label]} for label in SEEN}
        for when, (pm, avg, sim) in metric.items():
            values["pmixfed"][when] = _pm(pm)
            values["fedavg"][when] = _other(avg)
            values["fedsim"][when] = _other(sim)
            values["pmixfed-dynamic"][when] = _other(0.95) if dynamic is None else _pm(dynamic[(cell, when)])
        by_cell[cell] = values
    return _cells("table1", by_cell)


def _mu():
    # the paper's default sigmoid loses to fixed μ = 0.5; a better sigmoid b=0.5 must not stand in for it
    return _result(
        "mu",
        {
            "sigmoid b=1": {"seen": [0.70, 0.71, 0.72]},
            "sigmoid b=0.5": {"seen": [0.99, 0.99, 0.99]},
            "fixed mu=0.2": {"seen": [0.50, 0.51, 0.52]},
            "fixed mu=0.5": {"seen": [0.80, 0.81, 0.82]},
            "fixed mu=0.8": {"seen": [0.40, 0.41, 0.42]},
            "pFedMix (lambda=0.5)": {"seen": [0.60, 0.60, 0.60]},
            "Beta adaptive": {"seen": [0.65, 0.66, 0.67]},
            "Beta α=1 (random)": {"seen": [0.60, 0.60, 0.61]},
        },
        dataset="digits5-lite",
    )


def _table2_mlp15(n100=True):
    # before fine-tuning FedAlt clearly ahead of pMixFed, after fine-tuning pMixFed clearly ahead of all three
    cell = {
        "pmixfed": {"before": _pm(0.50), "after": _pm(0.80), "seen": [0.9, 0.9, 0.9]},
        "fedavg": {"before": _other(0.45), "after": _other(0.60), "seen": [0.5, 0.5, 0.5]},
        "fedalt": {"before": _other(0.70), "after": _other(0.70), "seen": [0.9, 0.9, 0.9]},
        "fedbabu": {"before": _other(0.40), "after": _other(0.65), "seen": [0.8, 0.8, 0.8]},
    }
    cells = {("fmnist", "N10"): cell, **({("fmnist", "N100"): cell} if n100 else {})}
    return _cells("table2_mlp15", cells)


def _evals(accs):
    return [{"round": t, "test_acc": [a, a]} for t, a in accs]


def _shock(drops, base=0.9):
    """Shock runs whose shock drops ``drops[method][i]`` points of accuracy at round 6 (seed SEEDS[i]); ``base``: the
    accuracy without the shock (a method → value mapping, or one value for all)."""
    records, rows = [], []
    for method, values in drops.items():
        acc0 = base[method] if isinstance(base, dict) else base
        for seed, drop in zip(SEEDS, values):
            for shocked in (False, True):
                acc = acc0 - (drop / 100 if shocked else 0.0)
                params = {"shock_round": 5} if shocked else {}
                config = {"method": method, "seed": seed, "method_params": params}
                label = f"{method} / {'shock' if shocked else 'none'}"
                records.append({"label": label, "config": config, "evals": _evals([(4, acc0), (6, acc)])})
                rows.append({"label": label, "seed": seed, "test_acc": acc})
    return ExperimentResult(PAPER.experiment("shock"), "cpu", pd.DataFrame(rows), records)


def _hetero(scale=1.0):
    records = []
    slope = {"pMixFed": 0.01, "FedAvg (λ^B=1, λ^A=0)": 0.0, "Local (λ^B=0)": 0.01}
    base = {"pMixFed": 0.80, "FedAvg (λ^B=1, λ^A=0)": 0.70, "Local (λ^B=0)": 0.80}
    depths = [3, 5, 7, 9, 11, 13]
    for v in slope:
        for s in SEEDS:
            accs = []
            for cid in range(12):
                noise = 0.002 * ((cid + s) % 3 - 1) + (0.01 * (s - 1) if v == "Local (λ^B=0)" else 0.0)
                accs.append(scale * (base[v] + slope[v] * depths[cid % 6] + noise))
            config = {"seed": s, "method_params": {"depths": depths}}
            evals = [{"round": 1, "test_acc": accs}]
            records.append({"label": v, "config": config, "summary": {"best_round": 1}, "evals": evals})
    return ExperimentResult(PAPER.experiment("hetero"), "cpu", pd.DataFrame(), records)


def _mismatched():
    return _result("mismatched", {"pmixfed": {"seen": [0.30, 0.32, 0.31]}, "fedavg": {"seen": [0.50, 0.52, 0.51]}})


def _results(**changes):
    base = dict(
        lr=LR,
        fixed_point=FP,
        lemma1=L1,
        mu_curves=MU_FACTS,
        beta_pdfs=BETA_FACTS,
        table1=_table1(),
        table2_mlp15=_table2_mlp15(),
        mu=_mu(),
        shock=_shock({"pmixfed": [2.0, 3.0, 2.5], "fedsim-shock": [20.0, 25.0, 22.0]}),
        hetero=_hetero(),
        mismatched=_mismatched(),
    )
    return {**base, **changes}


def _by_claim(claims):
    return {c.claim: c for c in claims}


THM14 = "Thm 1/4: the mixing degree equals the learning-rate ratio, λ = η_g/η_l"
HISTORY = "Aggregation mixing keeps the previous global model state (history) and so addresses catastrophic forgetting"
DRIFT = "Aggregation mixing reduces client drift: constant mixing moves FedAvg's fixed point"
TABLE1 = LEDGER.TABLE1_CLAIM.claim
TABLE2 = LEDGER.TABLE2_CLAIM.claim
DYNAMIC = LEDGER.TABLE1_DYNAMIC_CLAIM.claim
G3 = "G.3: the adaptive Beta schedule (α = 0.1 → 100 → 0.1) beats random λ ~ U(0, 1) (α = 1)"
FIG4 = "Fig. 4: pMixFed's accuracy drops less than FedSim's after a collapse"
FIG5 = "Fig. 5: adaptive (sigmoid) μ beats fixed μ and pFedMix"
TABLE3 = "Table 3: deeper clients reach higher accuracy (heterogeneous depths, one federation)"


def test_theory_verdicts():
    out = _by_claim(decide(PAPER, _results()))
    thm = out[THM14]
    assert thm.verdict == CONTRADICTED and thm.label == "contradicted (by part)"
    assert {k: o.verdict for k, o in thm.outcome.parts} == {"formula": CONTRADICTED, "analogy": REPRODUCED}
    assert "(residual ≤ 1e-15)" in thm.note  # the exact identity's residual, filled in
    assert out["Lemma 1 (descent over r local steps)"].verdict == REPRODUCED
    assert out["Thm 3: (1/T) Σ ‖∇F‖² = O(1/T)"].verdict == CONTRADICTED
    # history kept (E5) holds by construction and forgetting is not measured: shown, not testable, whether the
    # identity holds or not
    history = out[HISTORY]
    assert history.verdict == NOT_TESTABLE and "max |residual| ≤ 1e-15" in history.outcome.ours
    assert "true by construction" in history.outcome.detail
    broken = C.history({"fixed_point": {**FP, "ema_err_0.5": 1e-3}})[0]
    assert broken.verdict == NOT_TESTABLE and "1.00e-03" in broken.ours
    assert out[DRIFT].verdict == CONTRADICTED  # the fixed point does not move: our check
    assert C.drift({"fixed_point": {**FP, "fp_gap_0.9": 1e-3}})[0].verdict == REPRODUCED
    # the paper's λ = η_g/η_l would be reproduced only if its residual were at float64 precision; a wrong E1 identity
    # breaks the analogy part
    assert C.theorem1({"lr": {**LR, "paper_min_off_half": 1e-16}})[0].verdict == REPRODUCED
    broken = dict(C.theorem1({"lr": {**LR, "e1_max": 1e-3}})[0].parts)
    assert broken["analogy"].verdict == CONTRADICTED
    # Theorem 3 would hold if the noisy running average decayed below DECAY × the floor
    assert C.theorem3({"lemma1": {**L1, "noisy_last": 0.001}})[0].verdict == REPRODUCED
    # Lemma 1 fails when the isotropic sides differ, or the anisotropic inequality is violated
    assert C.lemma1({"lemma1": {**L1, "iso_max_gap": 1e-3}})[0].verdict == CONTRADICTED
    assert C.lemma1({"lemma1": {**L1, "ani_min_slack": -1e-3}})[0].verdict == CONTRADICTED


def _expected_parts(means):
    """The Table 1 claim's parts recomputed from the synthetic means: held where pMixFed is ≥ 5 points above both
    baselines, against where one baseline is ≥ 5 points above it, below the floor (15 %) where pMixFed is."""
    held, against, untrained = [], [], []
    for (ds, st), metric in means.items():
        for when, (pm, avg, sim) in metric.items():
            name = f"{ds} {st} {when}"
            if 100 * (pm + 0.01) < 15:  # its mean over the seeds
                untrained.append(name)
            elif pm - max(avg, sim) >= 0.05:
                held.append(name)
            elif max(avg, sim) - pm >= 0.05:
                against.append(name)
    return held, against, untrained


def test_table1_most_cases_over_the_cells_against_the_baselines():
    """§5.2's 'in most cases': the Table 1 claim holds when pMixFed beats every baseline in at least 5 of the 8 (cell,
    before / after) parts; pMixFed-Dynamic (the paper's own variant, above pMixFed everywhere here) is no competitor;
    a part whose pMixFed did not train is not testable."""
    held, against, untrained = _expected_parts(TABLE1_MEANS)
    assert (len(held), len(against), untrained) == (5, 1, ["digits5-lite N10 before"])
    claim = _by_claim(decide(PAPER, _results()))[TABLE1]
    parts = dict(claim.outcome.parts)
    assert list(parts) == [f"{ds} {st} {w}" for ds, st in TABLE1_CELLS["cpu"] for w in ("before", "after")]
    assert sorted(k for k, o in parts.items() if o.verdict == REPRODUCED) == sorted(held)
    assert [k for k, o in parts.items() if o.verdict == CONTRADICTED] == against
    assert parts["digits5-lite N10 before"].verdict == NOT_TESTABLE
    assert "pmixfed did not train (11.0 %, chance 10.0 %)" in parts["digits5-lite N10 before"].detail
    assert parts["digits5-lite N100 after"].verdict == INCONCLUSIVE  # a tie
    assert claim.verdict == REPRODUCED and claim.outcome.ours.startswith("5 of 8 hold (5 claimed)")
    assert "pmixfed-dynamic" not in claim.outcome.ours  # no competitor
    assert "vs fedavg" in claim.outcome.ours and "vs fedsim" in claim.outcome.ours  # against every baseline
    assert list(claim.seeds) == list(SEEDS)
    # the paper's effect: MNIST N = 10 (79.42 − 78.49, 99.62 − 99.33) for both N10 cells, none at N100
    assert claim.paper_effect == (
        "fmnist N10 before: +0.93; fmnist N10 after: +0.29; digits5-lite N10 before: +0.93; digits5-lite N10 after: +0.29"
    )
    # ... read against our interval for the paper's own pair: pMixFed − FedSim before fine-tuning (FedAvg would give
    # the smallest lead, chosen on test values), pMixFed − Per-FedAvg after, which this cell does not run: no interval
    pm, sim = np.array(_pm(0.80)), np.array(_other(0.60))
    before = parts["fmnist N10 before"].interval
    assert before.n == 3 and before.mean == pytest.approx(100 * np.mean(pm - sim))
    assert parts["fmnist N10 after"].interval is None
    assert claim.effect_vs_ours.startswith("fmnist N10 before: below; fmnist N10 after: —")
    # one part fewer held: 4 of 8, two contradicted, neither reproduced nor contradicted as a whole
    fewer = {**TABLE1_MEANS, ("fmnist", "N100"): {"before": (0.50, 0.40, 0.30), "after": (0.50, 0.60, 0.50)}}
    held, against, _ = _expected_parts(fewer)
    assert (len(held), len(against)) == (4, 2)
    assert _by_claim(decide(PAPER, _results(table1=_table1(fewer))))[TABLE1].verdict == INCONCLUSIVE
    # four parts against (more than 8 − 5): fewer than 5 can hold
    worse = {
        **fewer,
        ("digits5-lite", "N100"): {"before": (0.20, 0.30, 0.40), "after": (0.35, 0.45, 0.45)},
    }
    held, against, _ = _expected_parts(worse)
    assert len(against) == 4
    worst = _by_claim(decide(PAPER, _results(table1=_table1(worse))))[TABLE1]
    assert worst.verdict == CONTRADICTED and "4 of 8 contradicted" in worst.label
    # pMixFed-Dynamic counted as a competitor would have made every part fail: it is excluded by name
    assert "pmixfed-dynamic" in C.OWN_VARIANTS


def test_table1_parts_of_cells_not_run_are_not_testable():
    """The claim's parts are the cpu profile's declared cells: a cell the results do not hold is a not-testable part,
    and too few testable parts make the claim not testable."""
    only = {("fmnist", "N10"): TABLE1_MEANS[("fmnist", "N10")]}
    claim = _by_claim(decide(PAPER, _results(table1=_table1(only))))[TABLE1]
    parts = dict(claim.outcome.parts)
    assert [k for k, o in parts.items() if o.verdict != NOT_TESTABLE] == ["fmnist N10 before", "fmnist N10 after"]
    assert "does not run digits5-lite N100" in parts["digits5-lite N100 after"].detail
    assert (
        claim.verdict == NOT_TESTABLE
        and "only 1 of 8 parts testable and not contradicted (1 more contradicted), 5 needed" in claim.label
    )


# pMixFed-Dynamic's mean unseen accuracy per (cell, metric), against TABLE1_MEANS' (pMixFed, FedAvg, FedSim)
DYNAMIC_MEANS = {
    (("fmnist", "N10"), "before"): 0.80,  # FedAvg 0.70, FedSim 0.60: held
    (("fmnist", "N10"), "after"): 0.60,  # FedSim 0.70 ahead: against
    (("fmnist", "N100"), "before"): 0.10,  # below the floor: not testable
    (("fmnist", "N100"), "after"): 0.66,  # FedAvg 0.60: held, though pMixFed (0.70) is above it: no competitor
    (("digits5-lite", "N10"), "before"): 0.40,  # 0.30 / 0.30: held (pMixFed did not train here; no matter)
    (("digits5-lite", "N10"), "after"): 0.40,  # FedAvg 0.50 ahead: against
    (("digits5-lite", "N100"), "before"): 0.50,  # 0.30 / 0.20: held
    (("digits5-lite", "N100"), "after"): 0.45,  # a tie with both
}


def _expected_dynamic(dynamic):
    """The pMixFed-Dynamic row's parts recomputed from the synthetic means (pMixFed ignored): held where
    pMixFed-Dynamic is ≥ 5 points above both baselines, against where one is ≥ 5 points above it, not testable where
    its mean over the seeds (x + 0.01) is below the floor (15 %)."""
    held, against, untrained = [], [], []
    for ((ds, st), when), x in dynamic.items():
        _, avg, sim = TABLE1_MEANS[(ds, st)][when]
        name = f"{ds} {st} {when}"
        if 100 * (x + 0.01) < 15:
            untrained.append(name)
        elif x - max(avg, sim) >= 0.05:
            held.append(name)
        elif max(avg, sim) - x >= 0.05:
            against.append(name)
    return held, against, untrained


def test_table1_dynamic_row_decides_the_second_version_against_the_baselines():
    """The pMixFed-Dynamic row applies the Table 1 rule to pMixFed-Dynamic: a part per cpu cell and before / after
    fine-tuning, each pMixFed-Dynamic against every baseline (pMixFed, the other version, is no competitor), at least 5
    of 8 to hold; its verdicts are recomputed here from the means."""
    held, against, untrained = _expected_dynamic(DYNAMIC_MEANS)
    assert (len(held), len(against), untrained) == (4, 2, ["fmnist N100 before"])
    claim = _by_claim(decide(PAPER, _results(table1=_table1(dynamic=DYNAMIC_MEANS))))[DYNAMIC]
    parts = dict(claim.outcome.parts)
    assert list(parts) == [f"{ds} {st} {w}" for ds, st in TABLE1_CELLS["cpu"] for w in ("before", "after")]
    assert sorted(k for k, o in parts.items() if o.verdict == REPRODUCED) == sorted(held)
    assert sorted(k for k, o in parts.items() if o.verdict == CONTRADICTED) == sorted(against)
    assert parts["fmnist N100 before"].verdict == NOT_TESTABLE
    assert "pmixfed-dynamic did not train (11.0 %, chance 10.0 %)" in parts["fmnist N100 before"].detail
    assert parts["digits5-lite N100 after"].verdict == INCONCLUSIVE  # a tie
    # 4 hold (5 needed), 2 against (3 allowed): neither
    assert claim.verdict == INCONCLUSIVE and claim.outcome.ours.startswith("4 of 8 hold (5 claimed)")
    assert claim.source == "ours" and list(claim.seeds) == list(SEEDS)
    assert "vs pmixfed " not in claim.outcome.ours and "vs fedavg" in claim.outcome.ours and "vs fedsim" in claim.outcome.ours
    # the tie broken in pMixFed-Dynamic's favour: 5 of 8 hold
    won = {**DYNAMIC_MEANS, (("digits5-lite", "N100"), "after"): 0.55}
    held, against, _ = _expected_dynamic(won)
    assert (len(held), len(against)) == (5, 2)
    assert _by_claim(decide(PAPER, _results(table1=_table1(dynamic=won))))[DYNAMIC].verdict == REPRODUCED
    # pMixFed-Dynamic below both baselines in two more parts: 4 against, more than 8 − 5
    lost = {**DYNAMIC_MEANS, (("fmnist", "N10"), "before"): 0.50, (("digits5-lite", "N100"), "before"): 0.20}
    held, against, _ = _expected_dynamic(lost)
    assert len(against) == 4
    worst = _by_claim(decide(PAPER, _results(table1=_table1(dynamic=lost))))[DYNAMIC]
    assert worst.verdict == CONTRADICTED and "4 of 8 contradicted" in worst.label
    # the pMixFed row does not read pMixFed-Dynamic's values: unchanged by them
    assert _by_claim(decide(PAPER, _results(table1=_table1(dynamic=lost))))[TABLE1].verdict == REPRODUCED
    # a profile that does not run pMixFed-Dynamic (the smoke profile) leaves every part not testable, saying so
    runs = _table1()
    keep = (runs.table.label != "pmixfed-dynamic").tolist()
    runs = dataclasses.replace(
        runs, table=runs.table[keep].reset_index(drop=True), records=[r for r, k in zip(runs.records, keep) if k]
    )
    absent = _by_claim(decide(PAPER, _results(table1=runs)))[DYNAMIC]
    assert absent.verdict == NOT_TESTABLE and "does not run pmixfed-dynamic in fmnist N10" in absent.outcome.ours
    # the paper's effect: MNIST N = 10 for the N10 cells, N = 100 for the N100 cells, each against the pair the paper's
    # strongest baseline gives: 78.00 − 78.49 (FedSim), 99.37 − 99.33 (Per-FedAvg), 74.39 − 77.86 (FedAvg),
    # 97.53 − 99.24 (Per-FedAvg); Per-FedAvg is not run here, so the 'after' parts carry no interval
    assert claim.paper_effect.startswith(
        "fmnist N10 before: -0.49; fmnist N10 after: +0.04; fmnist N100 before: -3.47; fmnist N100 after: -1.71"
    )
    dyn, sim = np.array(_pm(0.80)), np.array(_other(0.60))
    assert parts["fmnist N10 before"].interval.mean == pytest.approx(100 * np.mean(dyn - sim))
    assert parts["fmnist N10 after"].interval is None
    dyn, avg = np.array(_pm(0.50)), np.array(_other(0.30))
    assert parts["digits5-lite N100 before"].interval.mean == pytest.approx(100 * np.mean(dyn - avg))


def test_the_papers_own_counts_for_pmixfed_dynamic():
    """Read off the paper's Table 1 by hand: pMixFed-Dynamic is above every baseline in 6 of its 12 cells (N = 10: all
    but MNIST before fine-tuning; N = 100: CIFAR-100 before only, a tie with Per-FedAvg at 22.42 after)."""
    assert E.paper_wins(E.PAPER_TABLE1, method="pmixfed-dynamic") == (6, 12)
    assert E.paper_margin(E.PAPER_TABLE1, "N100", "cifar100", 1, method="pmixfed-dynamic") == (0.0, "per-fedavg")
    # pMixFed is no baseline of pMixFed-Dynamic: above pMixFed at CIFAR-10 N = 10 fine-tune (68.07 vs 62.34), the
    # margin is against LG-FedAvg's 67.45
    assert E.paper_margin(E.PAPER_TABLE1, "N10", "cifar10", 1, method="pmixfed-dynamic") == (0.62, "lg-fedavg")
    assert LEDGER.DYNAMIC_EFFECT == {
        f"{ds} {st} {w}": {"N10": {"before": -0.49, "after": 0.04}, "N100": {"before": -3.47, "after": -1.71}}[st][w]
        for ds, st in TABLE1_CELLS["cpu"]
        for w in ("before", "after")
    }
    rivals = {("N10", "before"): "fedsim", ("N10", "after"): "per-fedavg", ("N100", "before"): "fedavg"}
    for part, (_, rival) in LEDGER.DYNAMIC_MARGINS.items():
        _, st, w = part.split()
        assert rival == rivals.get((st, w), "per-fedavg")
    # the pMixFed row's count and margins are unchanged by the method argument's default
    assert E.paper_wins(E.PAPER_TABLE1) == (7, 10)


def test_experiment_verdicts():
    claims = decide(PAPER, _results())
    got = {c.claim: c.verdict for c in claims}
    assert got["Personalization: pMixFed beats FedAvg on participating clients (N10, mean over datasets)"] == REPRODUCED
    assert got["pMixFed beats FedSim on participating clients (N10, mean over datasets)"] == INCONCLUSIVE
    assert got[FIG5] == CONTRADICTED
    assert got[FIG4] == INCONCLUSIVE  # the drop would reproduce; the persistent local models confound it
    assert "confounded: pMixFed's persistent local models" in _by_claim(claims)[FIG4].label
    assert got[TABLE3] == REPRODUCED
    assert got[next(k for k in got if k.startswith("§5.4.3"))] == PARTIAL  # beats FedAvg, not local (noisy)
    assert got[next(k for k in got if k.startswith("Mismatched"))] == REPRODUCED
    for c in claims:
        if c.seeds is not None:
            assert list(c.seeds) == list(SEEDS)
    fig5 = _by_claim(claims)[FIG5]
    assert "fixed mu=0.5 (chosen on validation)" in fig5.outcome.ours and "b=0.5" not in fig5.outcome.ours
    # the strongest competitor is the one strongest on validation, whatever its test accuracy
    mu = _mu()
    val = mu.table.copy()
    val.loc[val.label == "fixed mu=0.8", "best_val_acc"] = 0.99
    fig5 = _by_claim(decide(PAPER, _results(mu=ExperimentResult(mu.experiment, "cpu", val, mu.records))))[FIG5]
    assert "fixed mu=0.8 (chosen on validation)" in fig5.outcome.ours and fig5.verdict == REPRODUCED
    table3 = _by_claim(claims)[TABLE3]
    assert "local training's slope +1.00 points/block" in table3.note  # local's slope, filled in
    # the paper's Table 3 slope, (Σ (M_k − 8) acc_k) / Σ (M_k − 8)² over its six rows, lies below our +1.00 interval
    paper_slope = sum((m - 8) * acc for m, (_, acc) in E.PAPER_TABLE3.items()) / sum((m - 8) ** 2 for m in E.PAPER_TABLE3)
    assert paper_slope == pytest.approx(0.36)
    assert table3.paper_effect == "+0.36" and table3.effect_vs_ours == "below"


def test_arms_that_did_not_train_leave_drops_and_slopes_untestable():
    """The rules that read an arm's accuracy without comparing it: the shock's drop (against the run without the shock)
    and Table 3's slope are not testable when that arm stays below the floor (chance 10 % + 5 points)."""
    untrained = _shock({"pmixfed": [2.0, 3.0, 2.5], "fedsim-shock": [2.0, 3.0, 2.5]}, base={"pmixfed": 0.9, "fedsim-shock": 0.12})
    out = _by_claim(decide(PAPER, _results(shock=untrained, hetero=_hetero(scale=0.1))))
    assert out[FIG4].verdict == NOT_TESTABLE and "fedsim-shock / none did not train (12.0 %" in out[FIG4].label
    assert out[TABLE3].verdict == NOT_TESTABLE and "pMixFed did not train" in out[TABLE3].label
    # at 0.16 the FedSim runs trained: the drop is decided
    trained = _shock({"pmixfed": [2.0, 3.0, 2.5], "fedsim-shock": [9.0, 8.0, 9.5]}, base={"pmixfed": 0.9, "fedsim-shock": 0.16})
    decided = _by_claim(decide(PAPER, _results(shock=trained)))[FIG4]
    assert decided.verdict == INCONCLUSIVE and "(would be reproduced)" in decided.label  # decided, then confounded


def test_order_sources_and_paper_values_are_declared():
    claims = decide(PAPER, _results())
    assert [c.claim for c in claims] == [spec.claim for spec in PAPER.claims]  # in declaration order
    texts = [c.claim for c in claims]
    assert texts[:8] == [
        THM14,
        "Lemma 1 (descent over r local steps)",
        "Thm 3: (1/T) Σ ‖∇F‖² = O(1/T)",
        HISTORY,
        DRIFT,
        *(t for t in texts[5:8] if t.startswith(("Fig. 7:", "Fig. 8:"))),
    ]
    assert texts[8:11] == [TABLE1, TABLE2, DYNAMIC] and texts[-1].startswith("Mismatched") and len(texts) == 19
    assert TABLE1.startswith("Table 1 analogue: pMixFed outperforms the baselines on unseen clients in most cases (≥ 5 of 8")
    assert TABLE2.startswith("Table 2 analogue (15 blocks): pMixFed outperforms FedAvg, FedAlt and FedBABU on unseen")
    # only the paper's claims are counted: what it does not state is our check
    ours = {c.claim for c in claims if c.source == "ours"}
    assert ours == {
        DRIFT,
        *(t for t in texts if t.startswith("Fig. 8:")),
        "Personalization: pMixFed beats FedAvg on participating clients (N10, mean over datasets)",
        "pMixFed beats FedSim on participating clients (N10, mean over datasets)",
        FIG5,
        next(t for t in texts if t.startswith("§5.4.3")),
        next(t for t in texts if t.startswith("Mismatched")),
        G3,  # 'better performance tuning': control over the mixup, no accuracy stated
        TABLE3,  # the table's numbers with no conclusion drawn in the text
        DYNAMIC,  # §5.2 names pMixFed; the text states no result of pMixFed-Dynamic
        "Lemma 1 (descent over r local steps)",  # SGD's descent lemma: a textbook property
        next(t for t in texts if t.startswith("Fig. 7:")),  # the Beta density's shapes: a textbook property
    }
    # the 'most cases' claims quote the paper's hedge and its numbers, never 'best'
    by = _by_claim(claims)
    for text in (TABLE1, TABLE2):
        assert "most cases" in by[text].paper and "best" not in by[text].paper
        assert by[text].cite.endswith("“We observe that pMixFed outperforms the baselines in most cases.”")
    assert "79.42 / 99.62 against 78.49 (FedSim) / 99.33 (Per-FedAvg); N = 100: no pMixFed value" in by[TABLE1].paper
    assert "N = 10 47.90 / 82.17 against 30.79 (FedAvg) / 72.25 (FedAlt)" in by[TABLE2].paper
    assert "CIFAR-10 N = 100 (36.31) and CIFAR-100 N = 10 (28.05)" in by[TABLE2].paper


def test_the_papers_own_counts_and_effects():
    """Read off the paper's Tables 1 and 2 by hand: pMixFed is above every baseline in 7 of the 10 Table 1 cells where it
    has a value (below at CIFAR-10 N = 10 fine-tune, CIFAR-10 N = 100 both), 6 counting pMixFed-Dynamic (also CIFAR-10
    N = 10 before); in Table 2 in 6 of 8 (LG-FedAvg twice before fine-tuning), 4 counting pMixFed-Dynamic, and in 8 of 8
    against FedAvg, FedAlt and FedBABU."""
    everyone = lambda t: [m for m in t["N10"] if m != "pmixfed"]  # noqa: E731
    assert E.paper_wins(E.PAPER_TABLE1) == (7, 10) and E.paper_wins(E.PAPER_TABLE1, everyone(E.PAPER_TABLE1)) == (6, 10)
    assert E.paper_wins(E.PAPER_TABLE2) == (6, 8) and E.paper_wins(E.PAPER_TABLE2, everyone(E.PAPER_TABLE2)) == (4, 8)
    assert E.paper_wins(E.PAPER_TABLE2, ("fedavg", "fedalt", "fedbabu")) == (8, 8)
    assert E.paper_margin(E.PAPER_TABLE1, "N100", "cifar10", 0) == (-4.24, "fedavg")  # 37.73 − 41.97
    assert E.paper_margin(E.PAPER_TABLE1, "N100", "mnist", 1) is None  # pMixFed has no MNIST N = 100 value
    assert LEDGER.TABLE1_EFFECT == {
        "fmnist N10 before": 0.93,  # 79.42 − 78.49 (FedSim)
        "fmnist N10 after": 0.29,  # 99.62 − 99.33 (Per-FedAvg)
        "digits5-lite N10 before": 0.93,
        "digits5-lite N10 after": 0.29,
    }
    assert LEDGER.TABLE2_EFFECT == {
        "fmnist N10 before": 17.11,  # 47.90 − 30.79 (FedAvg)
        "fmnist N10 after": 9.92,  # 82.17 − 72.25 (FedAlt)
        "fmnist N100 before": 9.88,  # 29.22 − 19.34 (FedAlt)
        "fmnist N100 after": 0.77,  # 73.22 − 72.45 (FedAlt)
    }
    assert LEDGER.TABLE1_K == 5 and LEDGER.TABLE2_K == 3  # strict majorities of 8 and 4
    # ours is read against the same pairs: the competitor of each paper effect, run in that cell at the cpu profile
    rivals = {"before": "fedsim", "after": "per-fedavg"}  # Table 1 MNIST N = 10: 78.49 (FedSim), 99.33 (Per-FedAvg)
    assert {p: r for p, (_, r) in LEDGER.TABLE1_MARGINS.items()} == {p: rivals[p.split()[-1]] for p in LEDGER.TABLE1_EFFECT}
    assert {p: r for p, (_, r) in LEDGER.TABLE2_MARGINS.items()} == {
        "fmnist N10 before": "fedavg",
        "fmnist N10 after": "fedalt",
        "fmnist N100 before": "fedalt",
        "fmnist N100 after": "fedalt",
    }
    for name, margins in (("table1", LEDGER.TABLE1_MARGINS), ("table2_mlp15", LEDGER.TABLE2_MARGINS)):
        runs = _declared_runs(PAPER.experiment(name), "cpu")
        for part, (_, rival) in margins.items():
            dataset, setting, _ = part.split()
            assert rival in {l["label"] for l, _ in runs if (l["dataset"], l["setting"]) == (dataset, setting)}


def test_table2_claim_reads_the_15_block_experiment():
    """The Table 2 analogue applies the Table 1 rule to experiment table2_mlp15 against its three baselines: held after
    fine-tuning in both cells, contradicted before (FedAlt ahead), so 2 of 4 hold and 2 are against (more than 4 − 3):
    contradicted; with one cell run, 2 parts testable of the 3 needed: not testable unless contradicted."""
    claim = _by_claim(decide(PAPER, _results()))[TABLE2]
    parts = dict(claim.outcome.parts)
    assert {k: o.verdict for k, o in parts.items()} == {
        "fmnist N10 before": CONTRADICTED,
        "fmnist N10 after": REPRODUCED,
        "fmnist N100 before": CONTRADICTED,
        "fmnist N100 after": REPRODUCED,
    }
    assert claim.verdict == CONTRADICTED and "vs fedalt" in claim.outcome.ours and "vs fedbabu" in claim.outcome.ours
    assert claim.stand_in.startswith(LEDGER.STAND_IN_TABLE2)
    one = _by_claim(decide(PAPER, _results(table2_mlp15=_table2_mlp15(n100=False))))[TABLE2]
    assert one.verdict == NOT_TESTABLE and "does not run fmnist N100" in dict(one.outcome.parts)["fmnist N100 after"].detail
    # the main scope skips the experiment: not run
    skipped = {k: v for k, v in _results().items() if k != "table2_mlp15"}
    assert _by_claim(decide(PAPER, skipped, extended=False))[TABLE2].verdict == NOT_RUN


def test_g3_adaptive_against_random_beta():
    """G.3's row compares the adaptive Beta schedule with α = 1 on participating-client accuracy, paired by seed."""
    assert _by_claim(decide(PAPER, _results()))[G3].verdict == REPRODUCED
    mu = _mu()
    flipped = mu.table.copy()
    is_random = flipped.label == "Beta α=1 (random)"
    flipped.loc[is_random, "test_acc"] = 0.9
    out = _by_claim(decide(PAPER, _results(mu=ExperimentResult(mu.experiment, "cpu", flipped, mu.records))))
    assert out[G3].verdict == CONTRADICTED


def test_shock_direction_and_one_seed():
    flipped = _shock({"pmixfed": [20.0, 25.0, 22.0], "fedsim-shock": [2.0, 3.0, 2.5]})
    assert C.shock_drop({"shock": flipped})[0].verdict == CONTRADICTED
    one = _result("mismatched", {"pmixfed": {"seen": [0.3]}, "fedavg": {"seen": [0.5]}}, seeds=(0,))
    out = _by_claim(decide(PAPER, _results(mismatched=one)))
    assert out[next(k for k in out if k.startswith("Mismatched"))].label == "inconclusive (1 seed; stand-in)"


# ---- Figs. 7 and 8: exact rows --------------------------------------------------------------------------------
FIG7 = "Fig. 7: λ ~ Beta(α, α) is U-shaped for α < 1, uniform for α = 1 and peaked at ½ for α > 1"
FIG8_SHAPE = "Fig. 8: μ(acc) of Eq. 6 is ½ at acc = 50 for every t, falls with acc and steepens as t grows"
FIG8_TANGENT = "Fig. 8: the simple rule 1 − acc/100 is the sigmoid's tangent at acc = 50 when b·t/T = 0.04"


def test_fig7_fig8_exact_rows_on_the_computed_facts():
    out = _by_claim(decide(PAPER, _results()))
    assert [out[k].verdict for k in (FIG7, FIG8_SHAPE, FIG8_TANGENT)] == [REPRODUCED] * 3
    assert all(out[k].seeds is None and not out[k].stand_in for k in (FIG7, FIG8_SHAPE, FIG8_TANGENT))
    # Eq. 6's slope at acc = 50 is −b·(t/T)/4: recomputed here, it is what the facts hold (b = 1), up to the central
    # difference's truncation h²(t/T)³/48 (3e-10 at t/T = 1)
    assert MU_FACTS["slopes_at_50"] == pytest.approx([f / 4 for f in M.FIG8_FRACTIONS], abs=1e-9)
    assert "0.0025, 0.0100, 0.0250, 0.0500, 0.1250, 0.2500" in out[FIG8_SHAPE].outcome.ours
    # t/T = 0.01 (b = 1) is the nearest other curve: |0.01/4 − 1/100| = 0.0075
    assert out[FIG8_TANGENT].note.endswith("differ by at least 0.0075 per accuracy point")
    # Beta masses from closed forms: Beta(½, ½) is the arcsine law, F(x) = (2/π) asin(√x); Beta(2, 2): F(x) = 3x² − 2x³
    arcsine_ends = 4 / np.pi * np.arcsin(np.sqrt(0.1))
    cubic = lambda x: 3 * x**2 - 2 * x**3  # noqa: E731
    by_alpha = BETA_FACTS.set_index("alpha")
    assert by_alpha.end_mass[0.5] == pytest.approx(arcsine_ends, rel=1e-12)
    assert by_alpha.centre_mass[2.0] == pytest.approx(cubic(0.6) - cubic(0.4), rel=1e-12)
    assert f"α = 0.5: P(λ < 0.1 or λ > 0.9) = {arcsine_ends:.3f}" in out[FIG7].outcome.ours


def test_fig7_fig8_rows_fail_on_wrong_curves_and_shapes(monkeypatch):
    # a slope at acc = 50 that the simple rule does not share, and curves that do not steepen with t
    mu = {**MU_FACTS, "tangent_residual": 0.015, "slopes_at_50": MU_FACTS["slopes_at_50"][::-1]}
    out = _by_claim(decide(PAPER, _results(mu_curves=mu)))
    assert out[FIG8_TANGENT].verdict == CONTRADICTED
    parts = dict(out[FIG8_SHAPE].outcome.parts)
    assert parts["midpoint"].verdict == REPRODUCED and parts["shape"].verdict == CONTRADICTED
    assert out[FIG8_SHAPE].label == "contradicted (by part)"  # a part contradicted: the conjunction is
    # Eq. 6 centred at 40 instead of 50: μ(50) is no longer ½ and the simple rule no longer its tangent
    from pflnb.algorithms import pmixfed as A

    monkeypatch.setattr(M, "mu_sigmoid", lambda acc, t, horizon, b=1.0: A.mu_sigmoid(np.asarray(acc) + 10.0, t, horizon, b))
    shifted = M.mu_curve_facts()
    assert shifted["mid_residual"] > 1e-3 and shifted["tangent_residual"] > 1e-3
    out = _by_claim(decide(PAPER, _results(mu_curves=shifted)))
    assert out[FIG8_TANGENT].verdict == CONTRADICTED and dict(out[FIG8_SHAPE].outcome.parts)["midpoint"].verdict == CONTRADICTED
    # Beta(2, 2) filed under α = 0.7: its pdf peaks at ½, so the U-shaped part fails; without α = 1, uniform is untestable
    beta = M.beta_shape_facts((0.5, 2.0, 5.0))
    beta.loc[beta.alpha == 2.0, "alpha"] = 0.7
    parts = dict(C.beta_shapes({"beta_pdfs": beta})[0].parts)
    assert parts["U-shaped (α < 1)"].verdict == CONTRADICTED and parts["peaked (α > 1)"].verdict == REPRODUCED
    assert parts["uniform (α = 1)"].verdict == NOT_TESTABLE


# ---- views ----------------------------------------------------------------------------------------------
def test_shock_table_pairs_runs_by_seed():
    rec = []
    for seed, dip in ((0, 0.3), (1, 0.1)):
        base = _evals([(2, 0.8), (4, 0.85), (6, 0.9)])
        hit = _evals([(2, 0.8), (4, 0.85 - dip), (6, 0.88)])
        rec.append({"config": {"method": "pmixfed", "seed": seed, "method_params": {}}, "evals": base})
        rec.append({"config": {"method": "pmixfed", "seed": seed, "method_params": {"shock_round": 3}}, "evals": hit})
    t = E.shock_table(rec).set_index("seed")
    np.testing.assert_allclose(t.max_drop.to_numpy(), [30.0, 10.0])
    np.testing.assert_allclose(t.final_gap.to_numpy(), [2.0, 2.0])
    assert (t.shock_round == 3).all()


def test_unseen_table_reads_labels_and_unseen_means():
    res = _table1()
    res.records[0]["unseen"] = {"before": [0.2, 0.4], "after": [0.5, 0.7]}
    t = E.unseen_table(res)
    assert list(t.columns[:4]) == ["label", "dataset", "setting", "seed"]
    assert t.before[0] == pytest.approx(0.3) and t.after[0] == pytest.approx(0.6) and t.seen[0] == 0.90
    res.records[1]["unseen"] = {}
    assert np.isnan(E.unseen_table(res).before[1])


def test_depth_slopes_and_per_seed():
    acc = [0.5, 0.52, 0.54, 0.6, 0.6, 0.6]
    d = pd.DataFrame({"variant": "v", "seed": [0, 0, 0, 1, 1, 1], "depth": [3, 5, 7] * 2, "acc": acc})
    s = E.depth_slopes(d, "v")
    assert s[0] == pytest.approx(1.0) and s[1] == pytest.approx(0.0)  # points per block
    assert E.per_seed(d, "acc", variant="v") == pytest.approx({0: 0.52, 1: 0.6})
    with pytest.raises(ValueError, match="no rows"):
        E.per_seed(d, "acc", variant="w")


def test_mu_rule_residual_detects_a_wrong_log():
    acc, t, horizon = 70.0, 3, 100
    good = mu_sigmoid(acc, t, horizon)
    rnd = {"round": t, "client_metrics": {"0": {"mu": good, "acc_local": acc}}, "internals": {"mu_agg": 0.5, "acc_global": 50.0}}
    rec = {"config": {"method": "pmixfed", "method_params": {"horizon": horizon}}, "rounds": [rnd]}
    assert E.mu_rule_residual([rec]) < 1e-15
    rnd["client_metrics"]["0"]["mu"] = mu_sigmoid(acc, t, 10)  # the compressed horizon logged under T = 100
    assert E.mu_rule_residual([rec]) > 0.1


def test_stand_in_claims_are_marked():
    """Every claim decided on another setting than the paper's is a stand-in: each engine experiment's cpu setting
    (derived from the declarations), the float64 toys of Lemma 1 / Theorem 3 (quadratics) and of the history and drift
    claims (a 4-client quadratic); plus the claims decided by another criterion (Theorem 3's threshold, the history
    identity, the forced collapse of Fig. 4, three of Table 2's baselines). Theorem 1/4 (an identity of the paper's
    formulas) and the exact rows of Figs. 7 and 8 are not."""
    out = decide(PAPER, _results())
    plain = {c.claim for c in out if not c.stand_in}
    assert plain == {THM14, *(c.claim for c in out if c.claim.startswith(("Fig. 7:", "Fig. 8:")))}
    by = _by_claim(out)
    thm3 = by["Thm 3: (1/T) Σ ‖∇F‖² = O(1/T)"]
    assert thm3.label == "contradicted (criterion fails; stand-in)" and thm3.verdict == CONTRADICTED
    assert thm3.stand_in.startswith(LEDGER.STAND_IN_THM3) and PAPER_MODULE.SIDE["lemma1"] in thm3.stand_in
    assert by["Lemma 1 (descent over r local steps)"].stand_in == PAPER_MODULE.SIDE["lemma1"]
    assert by[HISTORY].stand_in.startswith(LEDGER.STAND_IN_HISTORY)
    assert by[FIG4].stand_in.startswith(LEDGER.STAND_IN_FIG4)
    assert "shock at cpu: dataset fmnist (paper: not stated; our paper profile: cifar10)" in by[FIG4].stand_in  # derived
    assert "table1 at cpu: dataset digits5-lite/fmnist (paper: cifar10/cifar100/mnist)" in by[TABLE1].stand_in
    assert by[TABLE1].label.endswith("stand-in)")
    # a side result the paper does not declare is refused
    with pytest.raises(ValueError, match="neither an experiment nor declared"):
        decide(dataclasses.replace(PAPER, side={k: v for k, v in PAPER.side.items() if k != "lr"}), _results())


def test_coverage_names_decided_claims_and_says_why(tmp_path):
    """Every item's ledger rows are decided claims (a full text, or a prefix of one claim only), every item not
    covered says why, a not-testable row is decided not testable, and the table written has one row per item in the
    declared order."""
    claims = decide(PAPER, _results())
    texts = [c.claim for c in claims]
    items = PAPER.coverage
    assert len({i.item for i in items}) == len(items)
    for item in items:
        for prefix in item.claims:
            matches = [t for t in texts if t.startswith(prefix)]
            assert prefix in matches or len(matches) == 1, (item.item, prefix, matches)  # the one the table reads
        if item.status != "covered":
            assert item.reason or item.claims, item.item
        if item.status == "not testable":
            assert all(c.verdict == NOT_TESTABLE for c in claims if any(c.claim.startswith(p) for p in item.claims))
    table = write_coverage(PAPER, claims, tmp_path / "coverage.csv")
    assert list(pd.read_csv(tmp_path / "coverage.csv").item) == [i.item for i in items] == list(table.item)
    assert not table.ledger.str.contains("(not decided)", regex=False).any()
    # the gap the issue names is an item of its own, not folded into Table 1
    pfedhn = next(i for i in items if "pFedHN" in i.item)
    assert pfedhn.status == "partly" and pfedhn.claims == (TABLE1,)  # a baseline of the Table 1 claim's parts
    # issue #48 item 8: pMixFed-Dynamic in Tables 1-2 and App. C.4 / D.3 each have an item, in the paper's order
    by = {i.item: i for i in items}
    order = [i.item for i in items]
    assert by["Table 1: pMixFed-Dynamic"].claims == (DYNAMIC,) and by["Table 1: pMixFed-Dynamic"].status == "partly"
    assert by["Table 2: pMixFed-Dynamic"].status == "missing" and "table2_mlp15" in by["Table 2: pMixFed-Dynamic"].reason
    assert by["App. C.4"].status == "partly" and "faster convergence rates compared to FedSGD" in by["App. C.4"].reason
    assert {next(t for t in texts if t.startswith(p)) for p in by["App. C.4"].claims} == {HISTORY, THM14}
    assert by["App. D.3"].status == "not testable" and "empty heading" in by["App. D.3"].reason
    assert order.index("Theorem 3") < order.index("App. C.4") < order.index("Theorem 4") < order.index("App. D.3")
    row = table.set_index("item").loc["Table 1: pMixFed-Dynamic"]
    assert row.ledger == f"{DYNAMIC}: {_by_claim(claims)[DYNAMIC].label}"
    # a coverage that names a claim the paper does not declare fails at import
    with pytest.raises(ValueError, match="does not declare"):
        Paper(PAPER.name, PAPER.title, PAPER.experiments, PAPER.claims, (Item("Table 9", "x", ("no such claim",)),))
