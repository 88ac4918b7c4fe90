"""The rules behind pMixFed's derived claims (declared in :mod:`pflnb.papers.pmixfed.ledger`), each decided by the one
verdict rule of :mod:`pflnb.experiments.claims`.

Every function reads the named results of the notebook and returns the outcome, the seeds behind it and, where the
claim's note names a measured value, that value. Theory claims read the float64 checks of the notebook's section 1
(``lr``: ``plots.lr_equivalence``, ``fixed_point``: ``plots.fixed_point_figure``, ``lemma1``:
``plots.lemma1_figure``, ``mu_curves``: ``mixup.mu_curve_facts``, ``beta_pdfs``: ``mixup.beta_shape_facts``);
experimental claims read the experiments' results, paired by seed. Tolerances are stated
numerical tolerances, never picked per claim: ``TOL`` for float64 identities. A rule that reads an arm's accuracy
without comparing it (a drop, a slope) first asks :func:`~pflnb.experiments.claims.trained` whether the arm trained.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pflnb.experiments.claims import (
    Outcome,
    best,
    check,
    compare,
    consistency,
    identity,
    most,
    not_testable,
    parts,
    residual_text,
    trained,
)
from pflnb.papers.pmixfed.experiments import OWN_VARIANTS, depth_slopes, depth_table, per_seed, shock_table, unseen_table

TOL = 1e-10  # float64 identities (residuals are about 1e-16)
DECAY = 0.1  # Theorem 3's O(1/T): the running average at T must fall below DECAY × the σ-noise floor
FP_GAP = 1e-8  # fixed points farther apart than this (float64 solves are exact to about 1e-15) count as different
HETERO = ("pMixFed", "FedAvg (λ^B=1, λ^A=0)", "Local (λ^B=0)")  # the Table 3 experiment's arms
UNSEEN_METRICS = ("before", "after")  # unseen clients' accuracy before / after the 2-epoch fine-tuning (Tables 1-2)
Decided = tuple[Outcome, list[int] | None]


def theorem1(results: Mapping[str, Any]) -> tuple[Outcome, None, dict[str, str]]:
    """Theorem 1/4 (``lr``) in two named parts: the printed formula λ = η_g/η_l against float64 (its smallest residual
    over λ away from ½, where λ and 1 − λ coincide) and the stated analogy, mixing acts as FedSGD's learning-rate ratio,
    by the exact identity 1 − λ = η_g/η_l (E1); the note gets the exact identity's residual."""
    lr = results["lr"]
    out = parts(
        formula=identity(lr["paper_min_off_half"], TOL, what="residual of λ = η_g/η_l, smallest over |λ − ½| > 0.05"),
        analogy=identity(lr["e1_max"], TOL, what="residual of 1 − λ = η_g/η_l (E1), largest over λ ∈ [0, 1]"),
    )
    return out, None, {"e1_residual": residual_text(lr["e1_max"], TOL)}


def lemma1(results: Mapping[str, Any]) -> Decided:
    """Eq. 21: equality on an isotropic quadratic, inequality on an anisotropic one (``lemma1``)."""
    l1 = results["lemma1"]
    ours = f"isotropic gap {residual_text(l1['iso_max_gap'], TOL)}; smallest anisotropic slack {l1['ani_min_slack']:.2e}"
    holds = l1["iso_max_gap"] <= TOL and l1["ani_min_slack"] > 0
    return check(
        holds, ours, criterion=f"LHS = RHS within {TOL:.0e} on an isotropic quadratic and LHS ≤ RHS on an anisotropic one"
    ), None


def theorem3(results: Mapping[str, Any]) -> Decided:
    """O(1/T): the noisy running average at T below ``DECAY`` × its noise floor (``lemma1``)."""
    l1 = results["lemma1"]
    ours = (
        f"σ² = 0.5: running average {l1['noisy_last']:.4f} at T vs noise floor {l1['floor']:.4f}; σ = 0: {l1['clean_last']:.2e}"
    )
    criterion = f"with gradient noise the running average falls below {DECAY:g} × the noise floor"
    return check(l1["noisy_last"] <= DECAY * l1["floor"], ours, criterion=criterion), None


def history(results: Mapping[str, Any]) -> Decided:
    """§1/§3.2.2: aggregation mixing keeps the previous global model's state and so addresses forgetting. Not testable:
    the history kept (the EMA form of the mixed global model, E5, ``fixed_point``) is shown, but it holds by
    construction, and no run measures the forgetting."""
    fp = results["fixed_point"]
    ema = max(v for k, v in fp.items() if k.startswith("ema_err"))
    kept = f"history kept: EMA form of the mixed global model (E5), max |residual| {residual_text(ema, TOL)}"
    return consistency(
        kept,
        "the history is an identity of Eq. 15 (true by construction); forgetting is not measured: no run leaves a "
        "client group out for some rounds and measures what the global model loses of it",
    ), None


def drift(results: Mapping[str, Any]) -> Decided:
    """Our check: constant aggregation mixing moves FedAvg's fixed point (E6, ``fixed_point``), which it must do to reduce
    client drift; a server step size leaves the fixed point where it is."""
    fp = results["fixed_point"]
    gap = fp["fp_gap_0.9"]
    return check(
        gap > FP_GAP,
        f"fixed point with λ = 0.9 vs FedAvg's: gap {residual_text(gap, FP_GAP)}; drift ‖G* − w_opt‖ = {fp['drift']:.3f}",
        criterion=f"the mixed fixed point differs from FedAvg's by more than {FP_GAP:.0e}",
    ), None


def _listed(values: Any, fmt: str = "g") -> str:
    return ", ".join(f"{v:{fmt}}" for v in values)


def mu_curve_shape(results: Mapping[str, Any]) -> Decided:
    """Fig. 8 (``mu_curves``), two named parts: μ(50) = ½ on every curve within ``TOL``; μ never rises with acc
    (within ``TOL``) and −dμ/dacc at acc = 50 strictly increases with t/T."""
    mu = results["mu_curves"]
    slopes = mu["slopes_at_50"]
    steeper = all(b > a for a, b in zip(slopes, slopes[1:]))
    shape = check(
        mu["max_rise"] <= TOL and steeper,
        f"largest increase of μ from one acc value to the next {residual_text(max(mu['max_rise'], 0.0), TOL)}; "
        f"−dμ/dacc at acc = 50 (b = 1): {_listed(slopes, '.4f')} for t/T = {_listed(mu['fractions'])}",
        criterion=f"μ never rises with acc (within {TOL:.0e}) and −dμ/dacc at 50 strictly increases with t/T",
    )
    outcome = parts(
        midpoint=identity(
            mu["mid_residual"],
            TOL,
            what=f"max |μ(50) − ½| over t/T ∈ {{{_listed(mu['fractions'])}}}, b ∈ {{{_listed(mu['slopes'])}}}",
        ),
        shape=shape,
    )
    return outcome, None


def mu_tangent(results: Mapping[str, Any]) -> tuple[Outcome, None, dict[str, str]]:
    """Fig. 8 (``mu_curves``): at b·t/T = 0.04 the simple rule 1 − acc/100 matches μ(acc) of Eq. 6 at acc = 50 in
    value and slope within ``TOL``; the note gets the smallest slope gap at the figure's other t/T."""
    mu = results["mu_curves"]
    out = identity(
        mu["tangent_residual"],
        TOL,
        what=f"max over b ∈ {{{_listed(mu['slopes'])}}} of the gaps in μ and dμ/dacc at acc = 50 (t/T = 0.04/b)",
    )
    return out, None, {"other_gap": f"{mu['other_slope_gap']:.4f}"}


def beta_shapes(results: Mapping[str, Any]) -> Decided:
    """Fig. 7 (``beta_pdfs``, one row per α), three named parts: for α < 1 the log-pdf falls strictly on (0, ½] and
    rises strictly on [½, 1) (U-shaped); for α = 1 the pdf is 1 within ``TOL`` (uniform); for α > 1 it rises, then
    falls (peaked at ½). A part with no α evaluated is not testable."""
    t = results["beta_pdfs"]

    def masses(rows: Any) -> str:
        return "; ".join(
            f"α = {r.alpha:g}: P(λ < 0.1 or λ > 0.9) = {r.end_mass:.3f}, P(0.4 < λ < 0.6) = {r.centre_mass:.3f}"
            for r in rows.itertuples()
        )

    def shaped(rows: Any, falls_first: bool, name: str) -> Outcome:
        if rows.empty:
            return not_testable(f"no α evaluated for the {name} shape")
        if falls_first:
            holds = bool(((rows.left_max < 0) & (rows.right_min > 0)).all())
            criterion = "the log-pdf falls strictly on (0, ½] and rises strictly on [½, 1), a minimum at ½"
        else:
            holds = bool(((rows.left_min > 0) & (rows.right_max < 0)).all())
            criterion = "the log-pdf rises strictly on (0, ½] and falls strictly on [½, 1), a maximum at ½"
        return check(holds, masses(rows) + " (uniform: 0.2 each)", criterion=criterion)

    one = t[t.alpha == 1.0]
    uniform = (
        identity(float(one.max_pdf_gap.max()), TOL, what="max |pdf − 1| at α = 1")
        if len(one)
        else not_testable("α = 1 not evaluated")
    )
    outcome = parts(
        **{
            "U-shaped (α < 1)": shaped(t[t.alpha < 1.0], True, "U"),
            "uniform (α = 1)": uniform,
            "peaked (α > 1)": shaped(t[t.alpha > 1.0], False, "peaked"),
        }
    )
    return outcome, None


def unseen_most(
    cells: Sequence[tuple[str, str]],
    k: int,
    results: Mapping[str, Any],
    experiment: str = "table1",
    paired: Mapping[str, str] | None = None,
    method: str = "pmixfed",
) -> Decided:
    """§5.2, "pMixFed outperforms the baselines in most cases", on the unseen clients of ``experiment`` (Table 1, or
    its 15-block Table 2 analogue): one part per declared cell (dataset, federation) of ``cells`` and per metric
    (``before`` / ``after`` fine-tuning, :data:`UNSEEN_METRICS`), named '<dataset> <federation> <metric>'; the claim
    holds in at least ``k`` parts (:func:`~pflnb.experiments.claims.most`). ``method``: the arm claimed to outperform,
    pMixFed or the paper's other version, ``pmixfed-dynamic`` (§5.1's "two version of our method").

    A part is ``method`` against every baseline of its cell (every arm but the paper's own two versions,
    :data:`~pflnb.papers.pmixfed.experiments.OWN_VARIANTS`: the claim sets a version against the baselines), by
    :func:`~pflnb.experiments.claims.best` with ``select=None``: no unseen-client validation accuracy is recorded (an
    unseen client is scored on its test split only), and the seen clients' validation accuracy ranks personalized models,
    not the global model an unseen client starts from, so no competitor is chosen and pMixFed must beat each one. A
    declared cell the profile does not run is a not-testable part. ``paired`` (part → competitor): the baseline the
    paper's effect in that part is measured against, whose comparison carries the part's interval (``best``'s
    ``paired``); none where the profile does not run that baseline in the cell."""
    result = results[experiment]
    runs = unseen_table(result)
    named: dict[str, Outcome] = {}
    seeds: set[int] = set()
    for dataset, setting in cells:
        cell = runs[(runs.dataset == dataset) & (runs.setting == setting)]
        for metric in UNSEEN_METRICS:
            name = f"{dataset} {setting} {metric}"
            if cell.empty:
                named[name] = not_testable(f"the {result.profile} profile does not run {dataset} {setting}")
                continue
            if method not in set(cell.label):
                named[name] = not_testable(f"the {result.profile} profile does not run {method} in {dataset} {setting}")
                continue
            a = per_seed(cell, metric, label=method)
            seeds |= set(a)
            failed = trained(**{method: a})  # said once for the part, not once per baseline
            if failed is not None:
                named[name] = failed
                continue
            others = {m: per_seed(cell, metric, label=m) for m in cell.label.unique() if m not in OWN_VARIANTS}
            rival = (paired or {}).get(name)  # a profile that does not run it leaves the part without an interval
            named[name] = best(a, others, select=None, name=method, paired=rival if rival in others else None)
    return most(k, **named), sorted(seeds) or None


def seen_n10(other: str, results: Mapping[str, Any]) -> Decided:
    """pMixFed against ``other`` on the participating clients' accuracy, per seed the mean over ``table1``'s N10 cells."""
    n10 = results["table1"].table.query("setting == 'N10'")
    pm, b = per_seed(n10, "test_acc", label="pmixfed"), per_seed(n10, "test_acc", label=other)
    return compare(pm, b, names=("pmixfed", other)), sorted(pm)


def shock_drop(results: Mapping[str, Any]) -> Decided:
    """Fig. 4: pMixFed's largest accuracy drop after the shock below FedSim's (``shock``, :func:`shock_table`); a drop is
    read against the run without the shock, so not testable when that run of either method did not train."""
    res = results["shock"]
    failed = trained(**{label: res.values(label, "test_acc") for label in ("pmixfed / none", "fedsim-shock / none")})
    if failed is not None:
        return failed, None
    shock = shock_table(res.records)
    d_pm, d_fs = (per_seed(shock, "max_drop", method=m) for m in ("pmixfed", "fedsim-shock"))
    return compare(d_pm, d_fs, higher=False, scale=1.0, names=("pmixfed drop", "fedsim drop")), sorted(d_pm)


def depth_slope(results: Mapping[str, Any]) -> tuple[Outcome, list[int], dict[str, float]]:
    """Table 3: pMixFed's per-seed slope of client accuracy on client depth above 0 (``hetero``); the note gets local
    training's mean slope."""
    depth = depth_table(results["hetero"].records)
    failed = trained(**{HETERO[0]: per_seed(depth, "acc", variant=HETERO[0])})  # a slope of clients that did not train
    if failed is not None:
        return failed, None, {"local_slope": float("nan")}
    slope, local = depth_slopes(depth, HETERO[0]), depth_slopes(depth, HETERO[2])
    outcome = compare(slope, {s: 0.0 for s in slope}, scale=1.0, names=("slope", "0"), unit="points/block")
    return outcome, sorted(slope), {"local_slope": sum(local.values()) / len(local)}


def depths_together(results: Mapping[str, Any]) -> Decided:
    """§5.4.3: pMixFed's client-mean accuracy above FedAvg's with the same ownership averaging and above local
    training's (``hetero``)."""
    depth = depth_table(results["hetero"].records)
    mean = {v: per_seed(depth, "acc", variant=v) for v in HETERO}
    outcome = parts(
        beats_fedavg=compare(mean[HETERO[0]], mean[HETERO[1]], names=("pMixFed", "FedAvg-own")),
        beats_local=compare(mean[HETERO[0]], mean[HETERO[2]], names=("pMixFed", "Local")),
    )
    return outcome, sorted(mean[HETERO[0]])
