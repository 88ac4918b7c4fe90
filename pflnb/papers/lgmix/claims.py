"""The rules behind LG-Mix's derived claims (declared in :mod:`pflnb.papers.lgmix.paper`), each decided by the one
verdict rule (:mod:`pflnb.experiments.claims`).

Every function reads the named results of the notebook (experiment results and the views of :mod:`.checks`) and
returns the outcome and the seeds behind it. Comparisons pair by seed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from pflnb.experiments import claims as R
from pflnb.experiments.claims import Outcome
from pflnb.papers.lgmix.checks import per_seed, t6b_passes

PAPER_ONLY = "needs the real datasets and a GPU (the paper profile)"
Decided = tuple[Outcome, list[int] | None]


def _zeros(values: Mapping[int, float]) -> dict[int, float]:
    return {s: 0.0 for s in values}


def _series(values: pd.Series) -> dict[int, float]:
    return {int(k): float(v) for k, v in values.items()}


def paper_only(results: Mapping[str, Any]) -> Decided:
    """Not testable without the paper's data and hardware."""
    return R.not_testable(PAPER_ONLY), None


def not_testable(reason: str):
    """A rule for a claim that cannot be tested here, with the specific ``reason``."""

    def decide(results: Mapping[str, Any]) -> Decided:
        return R.not_testable(reason), None

    decide.__doc__ = f"Not testable here: {reason}."
    return decide


def lambda_decreases(results: Mapping[str, Any]) -> Decided:
    """Mean raw λ of round 1 above that of the last round (``lambda_course``: per seed ``first``, ``last``)."""
    course = results["lambda_course"]
    first, last = _series(course["first"]), _series(course["last"])
    return R.compare(first, last, scale=1.0, names=("mean λ round 1", "mean λ last round"), unit=""), sorted(first)


def alpha_even(key: str) -> Callable[[Mapping[str, Any]], Decided]:
    """The rule of Fig. 2(a)'s APFL claims: APFL's final α (``results[key]``, per seed) within the paper's 0.5–0.6."""

    def decide(results: Mapping[str, Any]) -> Decided:
        alpha = _series(results[key])
        return R.value(alpha, 0.55, 0.05, scale=1.0, unit=""), sorted(alpha)

    decide.__doc__ = f"APFL's final α (``{key}``, per seed) within the paper's 0.5–0.6."
    return decide


apfl_alpha_even = alpha_even("apfl_alpha")
apfl_alpha_even_authors = alpha_even("apfl_alpha_authors")


def history_helps(results: Mapping[str, Any]) -> Decided:
    """Accuracy with history averaging above without (``ablations``), and the λ used smoother than the raw λ."""
    abl, course = results["ablations"].table, results["lambda_course"]
    hist, nohist = per_seed(abl, "LG-Mix"), per_seed(abl, "LG-Mix w/o history")
    var_raw, var_used = _series(course["var_raw"]), _series(course["var_used"])
    outcome = R.parts(
        accuracy=R.compare(hist, nohist, names=("with history", "without")),
        smoother_lambda=R.compare(var_used, var_raw, higher=False, scale=1.0, names=("|Δλ| used", "|Δλ| raw"), unit=""),
    )
    return outcome, sorted(hist)


def feature_trace_tracks_ntk(results: Mapping[str, Any]) -> Decided:
    """T6b: λ from the features against λ from the full empirical NTK (``t6b`` statistics)."""
    t6b = results["t6b"]
    ours = f"Spearman {t6b['spearman']:.3f}, mean |Δλ| {t6b['mean_abs_diff']:.3f} over {int(t6b['pairs'])} pairs"
    return R.check(t6b_passes(t6b), ours, criterion="Spearman > 0.9 and mean |λ_feat − λ_NTK| < 0.05 (spec T6b)"), None


def trace_is_cheap(results: Mapping[str, Any]) -> Decided:
    """The feature trace at least 10× faster than the full-Jacobian NTK trace at the largest n (``cost``)."""
    cost = results["cost"]
    n_max = int(cost.index.max())
    speed = float(cost.speedup_vs_full.loc[n_max])
    ours = f"n = {n_max}: the feature trace is {R.ratio_text(speed)} faster than the full-Jacobian NTK trace"
    return R.check(speed > 10, ours, criterion="at least 10× faster at the largest n"), None


def larger_features(results: Mapping[str, Any]) -> Decided:
    """Per seed, the smallest client gap of mean activations LG-Mix − FedAvg above 0 (``feature_gap``)."""
    gap = _series(results["feature_gap"].groupby(level="seed").gap.min())
    names = ("min over clients of LG-Mix − FedAvg mean activation", "0")
    return R.compare(gap, _zeros(gap), scale=1.0, names=names, unit=""), sorted(gap)


def head_differs_most(results: Mapping[str, Any]) -> Decided:
    """The output layer's relative distance minus the largest other layer's above 0 (``head_margin``)."""
    head = _series(results["head_margin"])
    names = ("head − largest other layer (relative distance)", "0")
    return R.compare(head, _zeros(head), scale=1.0, names=names, unit=""), sorted(head)


def pfl_scales(results: Mapping[str, Any]) -> tuple[Outcome, list[int], dict[str, int]]:
    """At the largest N of ``scalability``: the worst PFL method above FedAvg, and LG-Mix's client std the lowest."""
    scal = results["scalability"].table
    n_max = int(scal.num_clients.max())
    at_n = scal[scal.num_clients == n_max]
    pfl = {k: per_seed(at_n, k) for k in ("FedBN", "FedAlt", "LG-Mix")}
    worst_pfl = {s: min(v[s] for v in pfl.values()) for s in pfl["LG-Mix"]}
    client_std = {k: per_seed(at_n, k, "client_std") for k in dict.fromkeys(at_n.label)}
    outcome = R.parts(
        pfl_above_fedavg=R.compare(worst_pfl, per_seed(at_n, "FedAvg"), names=("worst of FedBN/FedAlt/LG-Mix", "FedAvg")),
        lowest_client_std=R.best(
            client_std["LG-Mix"], {k: v for k, v in client_std.items() if k != "LG-Mix"}, name="LG-Mix", higher=False
        ),
    )
    return outcome, sorted(worst_pfl), {"n_max": n_max}


def batch_size_insensitive(results: Mapping[str, Any]) -> tuple[Outcome, list[int], dict[str, Any]]:
    """Per seed, the accuracy range over the batch sizes of ``batch_sizes`` within the paper's 1 point."""
    table = results["batch_sizes"].table
    bs = table.groupby("seed").test_acc.agg(lambda s: s.max() - s.min())
    return (
        R.value(_series(bs), 0.0, 1.0),
        sorted(bs.index),
        {"batch_sizes": ", ".join(str(int(b)) for b in sorted(table.batch_size.unique()))},
    )


def fastest_training_loss(results: Mapping[str, Any]) -> Decided:
    """LG-Mix's mean training loss the lowest (``train_loss``: per label and seed)."""
    tl = results["train_loss"].pivot(index="seed", columns="label", values="train_loss")
    others = {k: _series(tl[k]) for k in tl.columns if k != "LG-Mix"}
    return R.best(_series(tl["LG-Mix"]), others, name="LG-Mix", higher=False, scale=1.0, unit=""), sorted(tl.index)


def proposition1(results: Mapping[str, Any]) -> Decided:
    """|observed − Prop. 1| at η = 0.01 within the Monte Carlo error (``theory``)."""
    return R.identity(results["theory"]["t2_linear_gap"], 3e-3, what="|observed − Prop. 1| at η = 0.01"), None


def eq5(results: Mapping[str, Any]) -> Decided:
    """tr(Ĥ) = tr(Σ)/m to round-off (``theory``)."""
    return R.identity(results["theory"]["eq5_error"], 1e-10, what="max relative error over widths"), None


def interlacing(results: Mapping[str, Any]) -> Decided:
    """s_min(H_c) ≥ s_min(H) (``theory``)."""
    return R.identity(results["theory"]["t7_violation"], 1e-12, what="largest interlacing violation"), None


def theorem1(results: Mapping[str, Any]) -> Decided:
    """No round of the simulation above its Theorem 1/2 bound (``theory``)."""
    th = results["theory"]
    ours = f"{th['t8_violations']} violations in {th['t8_rounds']} rounds"
    return R.check(th["t8_violations"] == 0, ours, criterion="no round above its bound"), None
