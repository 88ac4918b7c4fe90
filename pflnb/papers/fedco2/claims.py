"""The rules behind Fed-CO2's derived claims (declared in :mod:`pflnb.papers.fedco2.paper`), each decided by the one
verdict rule of :mod:`pflnb.experiments.claims`.

Every function reads the notebook's named results (experiment results of :func:`~pflnb.experiments.paper.run_experiment`,
the theory tables, the identity tolerance, the profile) and returns the outcome and the seeds behind it (and, for
Fig. 4, the share of clients that fills the claim's note). Comparative claims pair runs by seed (same seed = same
data, partition and initialization for every method); ranking claims ("Fed-CO2 is best") compare Fed-CO2 with its
strongest competitor (:func:`~pflnb.experiments.claims.best`); the theory checks and the structural identity have
stated numerical tolerances.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pflnb.experiments.claims import Outcome, best, check, compare, not_testable, parts
from pflnb.papers.fedco2 import experiments as E
from pflnb.papers.fedco2.ntk_co2 import theorem43_checks

THEORY_RTOL = 1e-10  # relative to λ_max(V_on): float64 eigenvalue round-off on 24×24 matrices is ~1e-15
Decided = tuple[Outcome, list[int] | None]


def untestable(reason: str):
    """A rule for a claim that cannot be tested here, with the specific ``reason`` (the paper's result that needs data
    or hardware this project does not have)."""

    def decide(results: Mapping[str, Any]) -> Decided:
        return not_testable(reason), None

    decide.__doc__ = f"Not testable here: {reason}."
    return decide


# ---- theory ---------------------------------------------------------------------------------------------------


def theorem43(results: Mapping[str, Any]) -> Decided:
    """Thm 4.3 under the paper's ½ convention on each toy data set (``spectra``): V_on PSD, interlacing, Weyl and the
    κ⁻¹ ordering, one part per data set."""
    t = theorem43_checks(results["spectra"], THEORY_RTOL).set_index("data")
    facts = ("psd", "interlacing", "weyl", "inv_cond_order", "half_beats_on")
    outcome = parts(
        **{
            f"data {d}": check(
                bool(all(t.loc[d, f] for f in facts)),
                f"λ_min ½(V_on+V_off) {t.loc[d, 'mu_half']:.4g} vs μ_on {t.loc[d, 'mu_on']:.4g} (μ_off {t.loc[d, 'mu_off']:.4g})",
                criterion="V_on PSD, interlacing, Weyl and κ⁻¹ ordering, each within 1e-10·λ_max(V_on)",
            )
            for d in t.index
        }
    )
    return outcome, None


def quarter_kernel(results: Mapping[str, Any]) -> Decided:
    """λ_min of the chain-rule kernel ¼(V_on+V_off) against μ_on on each toy data set (``spectra``)."""
    t = theorem43_checks(results["spectra"], THEORY_RTOL).set_index("data")
    outcome = parts(
        **{
            f"data {d}": check(
                bool(t.loc[d, "quarter_beats_on"]),
                f"λ_min ¼(V_on+V_off) {t.loc[d, 'mu_quarter']:.4g} vs μ_on {t.loc[d, 'mu_on']:.4g}",
                criterion="λ_min(¼(V_on+V_off)) ≥ μ_on − 1e-10·λ_max(V_on)",
            )
            for d in t.index
        }
    )
    return outcome, None


def gd_faster(results: Mapping[str, Any]) -> Decided:
    """The GD loss ordering on toy data B (``gd_order``, one row per seed); not testable at the smoke ``profile``."""
    if results["profile"] == "smoke":
        return not_testable("the smoke profile's GD runs are too short to reach the late regime"), None
    order = results["gd_order"]
    outcome = check(
        bool(order.holds.all()),
        f"{int(order.holds.sum())}/{len(order)} seeds hold",
        criterion="every seed: L(co2x2) < L(on)/3, L(co2) < L(on)/2, L(off) < L(on)/10, steeper late slope for co2x2",
    )
    return outcome, [int(s) for s in order.seed]


# ---- convergence over rounds (Fig. 2) ------------------------------------------------------------------------


def curves_best(results: Mapping[str, Any]) -> tuple[Outcome, list[int], dict[str, str]]:
    """Fig. 2 (top) on the ``feature`` runs: Fed-CO2's mean test accuracy over the evaluation rounds (client means)
    against the strongest baseline's; fills ``rounds``, the number of evaluation rounds."""
    curves = E.round_curves(results["feature"].records)
    means = E.curve_means(curves)
    baselines = [m for m in results["feature"].table.label.unique() if m != E.FEDCO2]
    co2 = E.per_seed(means, E.FEDCO2)
    outcome = best(co2, {m: E.per_seed(means, m) for m in baselines}, name="Fed-CO2")
    return outcome, sorted(co2), {"rounds": str(curves["round"].nunique())}


def fused_above_models(results: Mapping[str, Any]) -> tuple[Outcome, list[int], dict[str, str]]:
    """Fig. 2 (bottom) on the ``feature`` runs, two named parts: the fused prediction's mean test accuracy over the
    evaluation rounds against the stronger of its online and offline models (client means, per seed), and, per seed,
    the smallest margin over the rounds of fused − the higher of the two models at that round against 0 ('at every
    round'); fills ``rounds`` and ``share``, the share of evaluation rounds with fused ≥ both models per seed."""
    curves = E.round_curves(results["feature"].records)
    means = E.curve_means(curves)
    online, offline = E.COMPONENTS["fedco2"]
    fused = E.per_seed(means, E.FEDCO2)
    models = {"online": E.per_seed(means, online), "offline": E.per_seed(means, offline)}
    margins = E.fused_margins(curves)
    smallest = {int(s): float(m) for s, m in margins.groupby("seed").margin.min().items()}
    share = ", ".join(f"seed {int(s)}: {100 * a:.0f} %" for s, a in (margins.margin >= 0).groupby(margins.seed).mean().items())
    outcome = parts(
        **{
            "mean over rounds": best(fused, models, name="fused"),
            "at every round": compare(smallest, dict.fromkeys(smallest, 0.0), names=("smallest margin", "0")),
        }
    )
    return outcome, sorted(fused), {"rounds": str(curves["round"].nunique()), "share": share}


# ---- online vs offline vs fused, and the transfers (Tables 5, 10) and Fig. 7 ------------------------------------


def _no_transfer(results: Mapping[str, Any]) -> dict[str, dict[int, float]]:
    """{model: {seed: accuracy}} of the no-transfer Fed-CO2 runs' online, offline and fused models."""
    df = E.ablation_frame(results["ablation"])
    nt = df[df.variant == E.NO_TRANSFER]
    return {m: E.per_seed(nt, m, by="model") for m in ("online", "offline", "fused")}


def no_transfer_identity(results: Mapping[str, Any]) -> Decided:
    """Without transfers the online model equals FedBN and the offline model Local (``ablation``, ``feature``) within
    ``identity_tol`` (0 = bit-identical) at every seed, round, client and split."""
    res = E.component_residuals(results["ablation"], results["feature"])
    tol = results["identity_tol"]
    outcome = check(
        max(res.values()) <= tol,
        f"max |Δ accuracy| online − FedBN {res['online']:.2g}, offline − Local {res['offline']:.2g}",
        criterion=f"≤ {tol:g} at every seed, round, client and split" + (" (bit-identical)" if tol == 0 else ""),
    )
    return outcome, sorted(_no_transfer(results)["online"])


def online_beats_offline(results: Mapping[str, Any]) -> Decided:
    """The no-transfer online model against the offline model (per seed)."""
    nt = _no_transfer(results)
    return compare(nt["online"], nt["offline"], names=("online", "offline")), sorted(nt["online"])


def fusion_below_better(results: Mapping[str, Any]) -> Decided:
    """The no-transfer fused prediction below the better of its two models (the one with the higher seed mean)."""
    nt = _no_transfer(results)
    stronger = max(("online", "offline"), key=lambda k: sum(nt[k].values()) / len(nt[k]))
    return compare(nt["fused"], nt[stronger], higher=False, names=("fused", stronger)), sorted(nt["fused"])


def both_transfers(results: Mapping[str, Any]) -> Decided:
    """Full Fed-CO2 against the stronger single transfer (fused predictions, ``ablation``)."""
    abl = results["ablation"]
    full = abl.values(E.FULL)
    others = {"inter only": abl.values(E.INTER_ONLY), "intra only": abl.values(E.INTRA_ONLY)}
    return best(full, others, name="full"), sorted(full)


def bn_personal_best(results: Mapping[str, Any]) -> Decided:
    """Fig. 7: personal BN layers against the stronger of the other choices of the online model's personal part."""
    pers = results["personalize"]
    bn = pers.values(E.BN_LAYERS)
    others = {label: pers.values(label) for label in pers.table.label.unique() if label != E.BN_LAYERS}
    return best(bn, others, name="BN layers"), sorted(bn)


# ---- label skew (Table 3, Fig. 4), label + feature skew (Table 4), number of clients (Table 13) -------------------


def label_best(partition: str, results: Mapping[str, Any]) -> Decided:
    """Table 3 on ``partition``: Fed-CO2 against its strongest competitor among its own online (= FedBN) and offline
    (= Local) models and the baselines run (``label``)."""
    st = E.component_summary(E.by_partition(results["label"])[partition])
    co2 = E.per_seed(st, E.FEDCO2)
    others = {E.ONLINE: E.per_seed(st, E.ONLINE), E.OFFLINE: E.per_seed(st, E.OFFLINE)}
    others |= {m: E.per_seed(st, m) for m in sorted(set(st.method) - {E.FEDCO2, E.ONLINE, E.OFFLINE})}
    return best(co2, others, name="Fed-CO2"), sorted(co2)


def fused_beats_weaker(partition: str, results: Mapping[str, Any]) -> tuple[Outcome, list[int], dict[str, str]]:
    """Fig. 4 on ``partition``: the fused model against the per-client weaker of its two models at the last round
    (client means per seed); fills ``share``, the share of clients with fused ≥ weaker per seed."""
    fv = E.fusion_vs_components(E.last_round_components(E.by_partition(results["label"])[partition]))
    fused = dict(zip(fv.seed.astype(int), fv["Fed-CO2"]))
    weaker = dict(zip(fv.seed.astype(int), fv["weaker"]))
    share = ", ".join(f"seed {int(s)}: {100 * a:.0f} %" for s, a in zip(fv.seed, fv.above_weaker))
    return compare(fused, weaker, names=("fused", "per-client weaker model")), sorted(fused), {"share": share}


def label_feature(results: Mapping[str, Any]) -> Decided:
    """Table 4 (``label-feature``), two named parts: Fed-CO2 against the strongest baseline, FedBN below Local."""
    lf = results["label-feature"]
    co2 = lf.values(E.FEDCO2)
    base = {label: lf.values(label) for label in lf.table.label.unique() if label != E.FEDCO2}
    outcome = parts(
        **{
            "Fed-CO2 best": best(co2, base, name="Fed-CO2"),
            "FedBN below Local": compare(base[E.FEDBN], base[E.LOCAL], higher=False, names=("FedBN", "Local")),
        }
    )
    return outcome, sorted(co2)


def client_counts(results: Mapping[str, Any]) -> Decided:
    """Table 13 (``clients``): at every number of clients N, Fed-CO2 against its strongest competitor (FedAvg and its
    own online = FedBN and offline = Local models); one part per N."""
    df = E.client_count_frame(results["clients"].records)
    named: dict[str, Outcome] = {}
    used: set[int] = set()
    for n, g in df.groupby("clients"):
        co2 = E.per_seed(g, E.FEDCO2)
        others = {m: E.per_seed(g, m) for m in ("FedAvg", E.ONLINE, E.OFFLINE)}
        named[f"N={n}"] = best(co2, others, name="Fed-CO2")
        used |= set(co2)
    outcome = parts(**named) if len(named) > 1 else next(iter(named.values()))
    return outcome, sorted(used)


# ---- sweeps: label + feature skew over the Dirichlet α (Fig. 3), training-set size (Fig. 6), noise (Fig. 5) -----------


def sweep_best(results: Mapping[str, Any], experiment: str, field: str, symbol: str) -> Decided:
    """At every value of grid field ``field`` of ``experiment``, Fed-CO2 against its strongest competitor among the
    other arms run; one part per value, named ``symbol=value`` (a single value: that value's outcome)."""
    res = results[experiment]
    named: dict[str, Outcome] = {}
    used: set[int] = set()
    for value in sorted(res.table[field].unique()):
        co2 = res.values(E.FEDCO2, **{field: value})
        others = {label: res.values(label, **{field: value}) for label in res.table["label"].unique() if label != E.FEDCO2}
        named[f"{symbol}={value:g}"] = best(co2, others, name="Fed-CO2")
        used |= set(co2)
    outcome = parts(**named) if len(named) > 1 else next(iter(named.values()))
    return outcome, sorted(used)


def edge(res: Any, field: str, value: Any) -> dict[int, float]:
    """Per seed, Fed-CO2's test accuracy minus that of its strongest competitor (best mean) at ``field = value``."""
    co2 = res.values(E.FEDCO2, **{field: value})
    others = {label: res.values(label, **{field: value}) for label in res.table["label"].unique() if label != E.FEDCO2}
    strongest = max(others, key=lambda k: sum(others[k].values()) / len(others[k]))
    return {s: co2[s] - others[strongest][s] for s in co2 if s in others[strongest]}


def sweep_edge(results: Mapping[str, Any], experiment: str, field: str, symbol: str, hardest: str) -> Decided:
    """Fed-CO2's edge over its strongest competitor (:func:`edge`) is larger at the ``hardest`` end of the sweep of
    ``field`` ("min" or "max" value) than at the other end: the paired per-seed edges compared."""
    res = results[experiment]
    values = sorted(res.table[field].unique())
    hard, easy = (values[0], values[-1]) if hardest == "min" else (values[-1], values[0])
    a, b = edge(res, field, hard), edge(res, field, easy)
    return compare(a, b, names=(f"edge at {symbol}={hard:g}", f"edge at {symbol}={easy:g}")), sorted(a)


def alpha_sweep(results: Mapping[str, Any]) -> Decided:
    """Fig. 3 (``label-feature-alpha``): at every Dirichlet α, Fed-CO2 against its strongest competitor among the
    other arms run (FedAvg, FedBN); one part per α (a single α: that α's outcome)."""
    return sweep_best(results, "label-feature-alpha", "alpha", "α")


def ratio_sweep(results: Mapping[str, Any]) -> Decided:
    """Fig. 6 (``train-ratio``): at every training-set ratio γ, Fed-CO2 against its strongest competitor."""
    return sweep_best(results, "train-ratio", "train_ratio", "γ")


def ratio_edge(results: Mapping[str, Any]) -> Decided:
    """Fig. 6 (``train-ratio``): Fed-CO2's edge is larger at the smallest γ than with the whole training split."""
    return sweep_edge(results, "train-ratio", "train_ratio", "γ", "min")


def noise_sweep(results: Mapping[str, Any]) -> Decided:
    """Fig. 5 (``noise``): at every noise level σ_M, Fed-CO2 against its strongest competitor."""
    return sweep_best(results, "noise", "noise", "σ_M")


def noise_edge(results: Mapping[str, Any]) -> Decided:
    """Fig. 5 (``noise``): Fed-CO2's edge is larger at the strongest noise than without noise."""
    return sweep_edge(results, "noise", "noise", "σ_M", "max")
