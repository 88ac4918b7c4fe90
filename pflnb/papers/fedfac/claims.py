"""FedFac's claims, each decided by the one verdict rule of :mod:`pflnb.experiments.claims`.

:func:`claims` reads the notebook's result tables (built by :mod:`pflnb.papers.fedfac.experiments`): every
comparative claim pairs runs by seed; theory checks use stated criteria (the spec's recovery criterion AUC ≥ 0.95,
the stable-fraction criterion ≥ 0.9); value claims state their tolerance here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from pflnb.experiments.claims import Claim, Outcome, best, check, compare, not_testable, parts, ratio_text, value

PERSONALIZED = ("FedPer", "LG-FedAvg", "FedRep", "Ditto", "APFL", "Local")
SMOKE = "the smoke profile runs 1 seed and 2 rounds"
# Fig. 6 "the first four methods are ≈ identical": |FedFac − true| within 3 points (spec §3.6's assertable margin,
# about the ±0.03 sampling noise of 240 test points)
SIM_TOL = 3.0
# Table 7: FedFac costs 1.21–3.39× FedAvg, i.e. 2.3 ± 1.1
TIME_TARGET, TIME_TOL = 2.3, 1.1
RECOVERY_AUC = 0.95  # spec §3.5's recovery criterion
STABLE = 0.9  # spec §3.7's stable-fraction criterion
# Claims decided by a criterion other than the paper's own statement (see :class:`Claim`): what the paper states,
# what we test instead.
STAND_IN_THM2 = (
    "the paper states that, at fixed N, more clients lead to a larger generalization error (read off Thm 2's bound); "
    "we test only that the bound's data-dependent term sqrt(2 (C/n) yᵀ(H^s∞ + H^p∞)⁻¹ y) grows with C (square roots "
    "reconstructed; vacuous, > 1, at these sizes), not the generalization error"
)
STAND_IN_RECOVERY = (
    "the paper states that static and dynamic FedFac recover the true split, judged by test accuracy (Fig. 6); we test "
    "factor analysis on the true parameters (the oracle) by the AUC of its scores against the true split, with the "
    f"spec's threshold {RECOVERY_AUC}"
)


def by_seed(t: pd.DataFrame, column: str, **where: Any) -> dict[int, float]:
    """{seed: value of ``column``} over the rows of ``t`` matching ``where`` (column == value); one row per seed."""
    sel = t
    for k, v in where.items():
        sel = sel[sel[k] == v]
    if sel["seed"].duplicated().any():
        raise ValueError(f"by_seed: several rows per seed for {where}")
    return {int(s): float(x) for s, x in zip(sel["seed"], sel[column])}


def _common(*maps: Mapping[int, float]) -> list[dict[int, float]]:
    keys = set.intersection(*(set(m) for m in maps))
    return [{k: m[k] for k in sorted(keys)} for m in maps]


def _seeds(*maps: Mapping[int, float]) -> list[int]:
    return sorted(set.intersection(*(set(m) for m in maps)))


def _pair(a: Mapping[int, float], b: Mapping[int, float], **kw: Any) -> Outcome:
    a2, b2 = _common(a, b)
    if not a2:
        return not_testable("no seed ran both sides")
    return compare(a2, b2, **kw)


def theory_claims(r: Mapping[str, Any]) -> list[Claim]:
    """Figs. 1–2 and the §3 theory checks: interlacing, Theorem 1, Theorem 2, FA recovery on the oracle."""
    mot, eig, thm1, thm2, rec = r["motivation"], r["kernels"], r["thm1"], r["thm2"], r["recovery"]
    mot_seeds = sorted(set(mot.seed))
    spread = {s: by_seed(mot, "spread", split=s) for s in ("non-iid", "iid")}
    out = [
        Claim(
            "Non-IID data makes neurons client-specific (Fig. 1)",
            "heatmaps: client-specific neurons (non-IID) vs uniform (IID)",
            _pair(spread["non-iid"], spread["iid"], scale=1.0, names=("non-IID CV", "IID CV"), unit=""),
            "across-client CV of a neuron's mean activation; sklearn digits, 50 clients, MLP 64→200→10; seeds pair the splits",
            mot_seeds,
        ),
        Claim(
            "Per-neuron entropy: IID concentrated, non-IID spread/bimodal (Fig. 2)",
            "IID ≤ 0, concentrated; non-IID peaks ≈ 0 and ≈ 2",
            parts(
                spread=_pair(
                    by_seed(mot, "iqr", split="non-iid"),
                    by_seed(mot, "iqr", split="iid"),
                    scale=1.0,
                    names=("non-IID IQR", "IID IQR"),
                    unit="",
                ),
                upper_tail=_pair(
                    by_seed(mot, "q75", split="non-iid"),
                    by_seed(mot, "q75", split="iid"),
                    scale=1.0,
                    names=("non-IID q75", "IID q75"),
                    unit="",
                ),
            ),
            "entropy is scale-dependent; no clean peaks at 0 and 2",
            mot_seeds,
        ),
    ]
    gap = float((eig["lambda_p"] - eig["lambda_s"]).min())
    out.append(
        Claim(
            "λp ≥ λs (interlacing)",
            "asserted (§3.2)",
            check(
                gap >= -1e-12 and bool((eig["lambda_s"] > 0).all()),
                f"min over seeds of λp − λs = {gap:.4f}; λs = {eig.lambda_s.mean():.4f}, λp = {eig.lambda_p.mean():.4f}",
                criterion="λs > 0 and λp − λs ≥ −1e-12 for every seed",
            ),
            seeds=sorted(eig.seed),
        )
    )
    faster = bool((thm1["L(T)/L(0) fedsplit"] < thm1["L(T)/L(0) fedavg"]).all())
    below = bool(thm1["below bound fedsplit"].all() and thm1["below bound fedavg"].all())
    out.append(
        Claim(
            "Thm 1: FedSplit converges faster than FedAvg, under its bound",
            "rate 1−(ρ1λs+ρ2λp)/2 vs 1−ρ1λs/2",
            check(
                faster and below,
                f"L(T)/L(0) FedSplit {thm1['L(T)/L(0) fedsplit'].mean():.4f} vs FedAvg {thm1['L(T)/L(0) fedavg'].mean():.3f} "
                f"(mean of {len(thm1)} seeds); below bounds: {below}",
                criterion="FedSplit's relative loss below FedAvg's and both curves under their bounds, every seed and round",
            ),
            "part of the gain is structural (ρ2 = C·ρ1)",
            sorted(thm1.seed),
        )
    )
    b = thm2["B(C)"].to_numpy()
    out.append(
        Claim(
            "Thm 2 term grows with C at fixed N",
            "more clients ⇒ larger generalization error",
            check(
                bool((np.diff(b) > 0).all()),
                f"B({thm2.index[0]}) = {b[0]:.2f} → B({thm2.index[-1]}) = {b[-1]:.1f}",
                criterion="B(C) strictly increasing in C (mean over seeds)",
            ),
            "vacuous (>1) at these sizes; square roots reconstructed",
            stand_in=STAND_IN_THM2,
        )
    )
    hi, lo = rec[rec.kappa == 0.85], rec[rec.kappa == 0.5]
    named = {
        "κ = 0.85": check(
            bool((hi.auc >= RECOVERY_AUC).all()),
            f"min AUC {hi.auc.min():.3f} over p",
            criterion=f"AUC ≥ {RECOVERY_AUC} at every p",
        )
    }
    if len(lo):
        named["κ = 0.5"] = check(
            bool((lo.auc >= RECOVERY_AUC).all()),
            f"max AUC {lo.auc.max():.3f} over p",
            criterion=f"AUC ≥ {RECOVERY_AUC} at every p",
        )
    out.append(
        Claim(
            "FA recovers the true split (simulation oracle)",
            "FA ≈ true split (Fig. 6)",
            parts(**named) if len(named) > 1 else named["κ = 0.85"],
            "converged least-squares fit; fails (reversed) at κ = 0.5",
            stand_in=STAND_IN_RECOVERY,
        )
    )
    return out


def simulation_claims(r: Mapping[str, Any], testable: bool = True) -> list[Claim]:
    """Fig. 6 (FedFac ≈ true split; random split worse) and Fig. 7 (the dynamic partition stabilizes), at p = 0.5, α = 0.4."""
    sim, stab = r["sim"], r["stability"]
    main = sim[(sim.p == 0.5) & (sim.alpha == 0.4)]
    acc = {m: by_seed(main, "acc", method=m) for m in ("true", "dynamic", "static", "random_fixed", "random_redrawn")}
    sd = _seeds(acc["true"], acc["dynamic"])
    if not testable:
        return [
            Claim(c, p, not_testable(SMOKE))
            for c, p in (
                ("FedFac ≈ true split in accuracy (Fig. 6)", "≈ identical"),
                ("Random decomposition much worse (Fig. 6)", "much inferior"),
                ("Dynamic partition stabilizes (Fig. 7)", "→ ≈ 1"),
            )
        ]
    diff = {s: acc["dynamic"][s] - acc["true"][s] for s in sd}
    dyn = stab[(stab.p == 0.5) & (stab.alpha == 0.4) & (stab.method == "dynamic")]
    stable = float(dyn.stable_last.mean())
    return [
        Claim(
            "FedFac ≈ true split in accuracy (Fig. 6)",
            "first four methods ≈ identical",
            value(diff, 0.0, SIM_TOL),
            f"dynamic − true at p = 0.5, α = 0.4; tolerance ±{SIM_TOL:g} points (spec §3.6: ±0.03 test noise)",
            sd,
        ),
        Claim(
            "Random decomposition much worse (Fig. 6)",
            "much inferior",
            parts(
                redrawn=_pair(acc["true"], acc["random_redrawn"], names=("true", "random redrawn")),
                fixed=_pair(acc["true"], acc["random_fixed"], names=("true", "random fixed")),
            ),
            "a fixed random split is statistically the true split's twin (A18); only a redrawn one can be worse",
            _seeds(acc["true"], acc["random_redrawn"]),
        ),
        Claim(
            "Dynamic partition stabilizes (Fig. 7)",
            "stable fraction → ≈ 1",
            check(stable >= STABLE, f"{stable:.3f} (last 10 rounds, mean of {len(dyn)} runs)", criterion=f"≥ {STABLE}"),
            "full participation, C = 20",
            sorted(dyn.seed),
        ),
    ]


def _time_check(ratio: Mapping[int, float]) -> Outcome:
    """Table 7: FedFac's training time over FedAvg's (median over seeds) rounded to 0.5× (wall-clock ratios vary from
    run to run; rounding keeps the claims file stable), within the paper's range TIME_TARGET ± TIME_TOL."""
    r = float(np.median(list(ratio.values())))
    rounded = round(2 * r) / 2
    return check(
        TIME_TARGET - TIME_TOL <= rounded <= TIME_TARGET + TIME_TOL,
        f"FedFac / FedAvg training time {ratio_text(r)} (median over {len(ratio)} seeds, rounded to 0.5×)",
        criterion=f"within the paper's range {TIME_TARGET - TIME_TOL:g}–{TIME_TARGET + TIME_TOL:g}×",
    )


def table2_claims(r: Mapping[str, Any], testable: bool = True) -> list[Claim]:
    """Table 2 (label skew and feature shift), Fig. 9, Table 3, Table 7 and Table 8 claims."""
    t2, d5, loss, t3, tt, abl = r["t2"], r["d5"], r["loss"], r["t3"], r["time"], r["ablation"]
    skew, mild = r["skew"], r["mild"]
    names = [
        ("FedFac ≫ FedAvg under strong skew", "CIFAR-10 π=0.1: .8307 vs .8033"),
        ("Gap to FedAvg shrinks with milder skew", "CIFAR-10 π=1: .7153 vs .6849"),
        ("FedFac beats the personalized baselines (Table 2)", "best in almost all settings"),
        ("FedFac > FedAvg under feature shift (digits5-lite)", "not in the paper"),
        ("FedFac beats the personalized baselines under feature shift (digits5-lite)", "not in the paper"),
        ("FedFac's training loss falls faster than FedAvg's (Fig. 9)", "faster, gap grows with skew"),
        ("New clients: Ensemble ≥ LocalTrain (Table 3)", "Ensemble > LocalTrain always"),
        ("FedFac costs 1.2–3.4× FedAvg (Table 7)", "1.21–3.39×"),
        ("Masking personalized hurts more than masking shared (Table 8A)", "yes, esp. high skew"),
        ("FA split beats a random split (Table 8B)", "+0.4–3.1 pts"),
    ]
    if not testable:
        return [Claim(c, p, not_testable(SMOKE)) for c, p in names]
    ff = lambda s: by_seed(t2, "test_acc", setting=s, label="FedFac dynamic")  # noqa: E731
    fa = lambda s: by_seed(t2, "test_acc", setting=s, label="FedAvg")  # noqa: E731
    sd = _seeds(ff(skew), fa(skew))
    gap = {s: {k: ff(s)[k] - fa(s)[k] for k in _seeds(ff(s), fa(s))} for s in (skew, mild)}
    pers = [p for p in PERSONALIZED if p in set(t2[t2.setting == skew].label)]
    d5p = [p for p in PERSONALIZED if p in set(d5.label)]
    d5ff = by_seed(d5, "test_acc", label="FedFac dynamic")
    loss_parts = {
        s: _pair(
            by_seed(loss, "loss", setting=s, label="FedFac dynamic"),
            by_seed(loss, "loss", setting=s, label="FedAvg"),
            higher=False,
            scale=1.0,
            names=("FedFac", "FedAvg"),
            unit="(loss)",
        )
        for s in sorted(set(loss.setting), key=list(loss.setting).index)
    }
    ens_parts = {
        s: _pair(
            by_seed(t3, "acc", setting=s, method="FedFac Ensemble"),
            by_seed(t3, "acc", setting=s, method="FedFac LocalTrain"),
            names=("Ensemble", "LocalTrain"),
        )
        for s in sorted(set(t3.setting), key=list(t3.setting).index)
    }
    ratio = by_seed(tt, "ratio", setting=skew, label="FedFac dynamic")
    ab_s = abl.setting.iloc[0]
    ab = {v: by_seed(abl, "test_acc", setting=ab_s, variant=v) for v in sorted(set(abl.variant))}
    outcomes = [
        _pair(ff(skew), fa(skew), names=("FedFac", "FedAvg")),
        _pair(gap[skew], gap[mild], names=(f"gap {skew}", f"gap {mild}")),
        best(ff(skew), {p: by_seed(t2, "test_acc", setting=skew, label=p) for p in pers}, name="FedFac"),
        _pair(d5ff, by_seed(d5, "test_acc", label="FedAvg"), names=("FedFac", "FedAvg")),
        best(d5ff, {p: by_seed(d5, "test_acc", label=p) for p in d5p}, name="FedFac"),
        parts(**loss_parts) if len(loss_parts) > 1 else next(iter(loss_parts.values())),
        parts(**ens_parts) if len(ens_parts) > 1 else next(iter(ens_parts.values())),
        _time_check(ratio),
        _pair(ab["mask shared"], ab["mask personalized"], names=("mask shared", "mask personalized")),
        parts(
            fixed=_pair(ab["FA (dynamic)"], ab["random fixed"], names=("FA", "random fixed")),
            redrawn=_pair(ab["FA (dynamic)"], ab["random redrawn"], names=("FA", "random redrawn")),
        ),
    ]
    notes = [
        f"{skew}, Fashion-MNIST, 20 rounds: shared models barely trained",
        f"paired per seed: (FedFac − FedAvg) at {skew} minus at {mild}",
        f"{skew}: against the strongest of {'/'.join(pers)}; FedEM absent",
        "5 clients = 5 domains, 30 rounds",
        f"against the strongest of {'/'.join(d5p)}",
        "mean loss of the last 5 rounds, lower is claimed; one part per setting",
        "held-out clients; one part per setting",
        f"median per-round training time, {skew}; wall-clock, so shown rounded; times and FA's share in timing.csv",
        f"{ab_s}, τ = median",
        f"{ab_s}, τ = median; small margin in the paper",
    ]
    seeds = [
        sd,
        _seeds(gap[skew], gap[mild]),
        sd,
        sorted(d5ff),
        sorted(d5ff),
        sd,
        sorted(set(t3.seed)),
        sorted(ratio),
        sorted(ab["mask shared"]),
        sorted(ab["FA (dynamic)"]),
    ]
    return [Claim(c, p, o, n, s) for (c, p), o, n, s in zip(names, outcomes, notes, seeds)]


def claims(results: Mapping[str, Any], profile: str = "cpu") -> list[Claim]:
    """Every FedFac claim from the notebook's result tables (keys: motivation, kernels, thm1, thm2, recovery, sim,
    stability, t2, d5, loss, t3, time, ablation, skew, mild); experimental claims are not testable at smoke."""
    testable = profile != "smoke"
    return theory_claims(results) + simulation_claims(results, testable) + table2_claims(results, testable)
