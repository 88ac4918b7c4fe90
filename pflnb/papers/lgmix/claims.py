"""LG-Mix's claims, each decided by the one verdict rule (:mod:`pflnb.experiments.claims`).

Paper values: Table 1 (Digits5), Tables 2–4 and 6, Figs. 2–4 and the text of Sec. 3 and 5. Comparisons pair the
methods by seed; ``summ`` is a summary table with ``label``, ``seed`` and ``test_acc`` (fractions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from pflnb.experiments import claims as R
from pflnb.experiments.claims import Claim
from pflnb.papers.lgmix.checks import per_seed, t6b_passes

PAPER_ONLY = "needs the real datasets and a GPU (the paper profile)"
# Claims decided by a criterion other than the paper's own statement (see :class:`Claim`): what the paper states,
# what we test instead.
STAND_IN_T6B = (
    "the paper argues (citing Seleznova et al. 2023) that the last-layer feature kernel tracks the full NTK of its BN "
    "CNNs during training; we test, on a BN-free MLP on digit domains, whether λ from the features agrees with λ from "
    "the full empirical-NTK trace, by the spec's thresholds (Spearman > 0.9, mean |Δλ| < 0.05)"
)


def _zeros(values: Mapping[int, float]) -> dict[int, float]:
    return {s: 0.0 for s in values}


def _series(values: pd.Series) -> dict[int, float]:
    return {int(k): float(v) for k, v in values.items()}


def claims(
    *,
    summ: pd.DataFrame,
    lambda_course: pd.DataFrame,
    apfl_alpha: pd.Series,
    ablations: pd.DataFrame,
    t6b: dict[str, float],
    cost: pd.DataFrame,
    feature_gap: pd.DataFrame,
    head_margin: pd.Series,
    scalability: pd.DataFrame,
    batch_sizes: pd.DataFrame,
    train_loss: pd.DataFrame,
    theory: Mapping[str, Any],
) -> list[Claim]:
    """Every LG-Mix claim with its verdict.

    ``summ``/``ablations``: per-run summaries (label, seed, test_acc); ``lambda_course``: per seed first/last raw λ
    and round-to-round variation (raw, used); ``apfl_alpha``: per seed APFL's final α; ``t6b``: feature-vs-NTK λ
    statistics; ``cost``: trace timings by n; ``feature_gap``: per (seed, client) mean activation gap LG-Mix − FedAvg;
    ``head_margin``: per seed output-layer distance minus the largest other layer's; ``scalability``: summaries with
    num_clients and client_std; ``batch_sizes``: summaries with batch_size; ``train_loss``: per (label, seed) mean
    training loss; ``theory``: t2_linear_gap, eq5_error, t7_violation, t8_violations, t8_rounds.
    """
    labels = list(dict.fromkeys(summ.label))
    lg = per_seed(summ, "LG-Mix")
    seeds = sorted(lg)
    others = {k: per_seed(summ, k) for k in labels if k != "LG-Mix"}
    out = [
        Claim(
            "LG-Mix has the best mean accuracy on Digits5",
            "97.10 vs FedAlt 95.93, FedBN 95.47, FedAvg 94.52 (Table 1)",
            R.best(lg, others, name="LG-Mix"),
            "digits5-lite 8×8, small BN CNN, 16 rounds; spec §6 expects no strict win at this scale",
            seeds,
        ),
        Claim(
            "LG-Mix beats FedAvg's global model under feature shift",
            "+2.58 points (97.10 vs 94.52)",
            R.compare(lg, others["FedAvg"], names=("LG-Mix", "FedAvg")),
            seeds=seeds,
        ),
        Claim(
            "LG-Mix beats the fixed ratio λ = 0.5 (the adaptive λ matters)",
            "implied by the method",
            R.compare(lg, others["Fixed λ=0.5"], names=("LG-Mix", "fixed λ = 0.5")),
            seeds=seeds,
        ),
        Claim(
            "LG-Mix is best on Office-Caltech10, DomainNet, Camelyon17 and Retinal",
            "+4.18 / +5.01 / +0.84 / +3.93 Dice (Tables 1–3)",
            R.not_testable(PAPER_ONLY),
        ),
    ]
    first, last = _series(lambda_course["first"]), _series(lambda_course["last"])
    out.append(
        Claim(
            "λ starts high (mostly local) and decreases (Fig. 2a)",
            "curves only",
            R.compare(first, last, scale=1.0, names=("mean λ round 1", "mean λ last round"), unit=""),
            "with BN and eval-mode global features the start near 1 comes from the server's initial BN running statistics",
            sorted(first),
        )
    )
    alpha = _series(apfl_alpha)
    out.append(
        Claim(
            "APFL's adaptive α mixes local and global about evenly (Fig. 2a)",
            "α ≈ 0.5–0.6 throughout",
            R.value(alpha, 0.55, 0.05, scale=1.0, unit=""),
            "tolerance: the paper's range 0.5–0.6; pflnb's APFL: α₀ = 0.25, α-step = local lr",
            sorted(alpha),
        )
    )
    hist, nohist = per_seed(ablations, "LG-Mix"), per_seed(ablations, "LG-Mix w/o history")
    var_raw, var_used = _series(lambda_course["var_raw"]), _series(lambda_course["var_used"])
    out.append(
        Claim(
            "History averaging helps: higher accuracy, smoother λ (Table 4)",
            "Digits5 97.10 (0.05) → 97.10 (0.04); DomainNet 60.33 → 62.74",
            R.parts(
                accuracy=R.compare(hist, nohist, names=("with history", "without")),
                smoother_lambda=R.compare(var_used, var_raw, higher=False, scale=1.0, names=("|Δλ| used", "|Δλ| raw"), unit=""),
            ),
            "declared with two parts",
            sorted(hist),
        )
    )
    out.append(
        Claim(
            "The last-layer feature trace tracks the full NTK trace (Sec. 3.3)",
            "argued; cites Seleznova et al. 2023",
            R.check(
                t6b_passes(t6b),
                f"Spearman {t6b['spearman']:.3f}, mean |Δλ| {t6b['mean_abs_diff']:.3f} over {int(t6b['pairs'])} pairs",
                criterion="Spearman > 0.9 and mean |λ_feat − λ_NTK| < 0.05 (spec T6b)",
            ),
            "BN-free MLP, full empirical NTK over all parameters and logits, rounds ≥ 2",
            stand_in=STAND_IN_T6B,
        )
    )
    n_max = int(cost.index.max())
    speed = float(cost.speedup_vs_full.loc[n_max])
    out.append(
        Claim(
            "The trace via Σ is far cheaper than the full NTK (Tables 8–9)",
            "m×m instead of n×n",
            R.check(
                speed > 10,
                f"n = {n_max}: the feature trace is {R.ratio_text(speed)} faster than the full-Jacobian NTK trace",
                criterion="at least 10× faster at the largest n",
            ),
            "wall-clock ratio in one run, shown to its order of magnitude; the times are in figures/lgmix/timing.csv",
        )
    )
    gap = _series(feature_gap.groupby(level="seed").gap.min())
    out.append(
        Claim(
            "LG-Mix's features are larger than FedAvg's on every client (Fig. 2b)",
            "all 5 clients",
            R.compare(gap, _zeros(gap), scale=1.0, names=("min over clients of LG-Mix − FedAvg mean activation", "0"), unit=""),
            "test split, final models",
            sorted(gap),
        )
    )
    head = _series(head_margin)
    out.append(
        Claim(
            "The output layer differs most from the global model (Fig. 3)",
            "output layer largest; BN layers also differ",
            R.compare(head, _zeros(head), scale=1.0, names=("head − largest other layer (relative distance)", "0"), unit=""),
            "final models",
            sorted(head),
        )
    )
    n_max_c = int(scalability.num_clients.max())
    at_n = scalability[scalability.num_clients == n_max_c]
    pfl = {k: per_seed(at_n, k) for k in ("FedBN", "FedAlt", "LG-Mix")}
    worst_pfl = {s: min(v[s] for v in pfl.values()) for s in pfl["LG-Mix"]}
    client_std = {k: per_seed(at_n, k, "client_std") for k in dict.fromkeys(at_n.label)}
    out.append(
        Claim(
            f"PFL methods scale better than FedAvg; LG-Mix has the lowest client std (Fig. 2c; N = {n_max_c})",
            "curves only",
            R.parts(
                pfl_above_fedavg=R.compare(worst_pfl, per_seed(at_n, "FedAvg"), names=("worst of FedBN/FedAlt/LG-Mix", "FedAvg")),
                lowest_client_std=R.best(
                    client_std["LG-Mix"], {k: v for k, v in client_std.items() if k != "LG-Mix"}, name="LG-Mix", higher=False
                ),
            ),
            "declared with two parts; each domain split into shards",
            sorted(worst_pfl),
        )
    )
    bs = batch_sizes.groupby("seed").test_acc.agg(lambda s: s.max() - s.min())
    out.append(
        Claim(
            "Batch size changes accuracy by less than 1 point (Table 6)",
            "97.75 (8) … 97.05 (128)",
            R.value(_series(bs), 0.0, 1.0),
            f"range over batch sizes {sorted(batch_sizes.batch_size.unique())}; tolerance: the paper's 1 point",
            sorted(bs.index),
        )
    )
    tl = train_loss.pivot(index="seed", columns="label", values="train_loss")
    out.append(
        Claim(
            "LG-Mix converges fastest in training loss (Fig. 4)",
            "curves only",
            R.best(
                _series(tl["LG-Mix"]),
                {k: _series(tl[k]) for k in tl.columns if k != "LG-Mix"},
                name="LG-Mix",
                higher=False,
                scale=1.0,
                unit="",
            ),
            "training loss of the local epoch, averaged over rounds",
            sorted(tl.index),
        )
    )
    out += [
        Claim(
            "Proposition 1: one GD step shrinks the error by ≈ 1 − 2η tr(H)/n",
            "derivation",
            R.identity(theory["t2_linear_gap"], 3e-3, what="|observed − Prop. 1| at η = 0.01"),
            "Monte Carlo over the trials; tolerance: the Monte Carlo error of the mean",
        ),
        Claim(
            "Eq. (5): tr(Ĥ) = tr(Σ)/m",
            "identity",
            R.identity(theory["eq5_error"], 1e-10, what="max relative error over widths"),
        ),
        Claim(
            "Client blocks contract at least as fast (App. B, Cauchy interlacing)",
            "s_min(H_c) ≥ s_min(H)",
            R.identity(theory["t7_violation"], 1e-12, what="largest interlacing violation"),
        ),
        Claim(
            "Theorem 1/2: per-round contraction bound",
            "proof (App. B)",
            R.check(
                theory["t8_violations"] == 0,
                f"{theory['t8_violations']} violations in {theory['t8_rounds']} rounds",
                criterion="no round above its bound",
            ),
            "two-layer ReLU network",
        ),
    ]
    return out


def claim_seeds(claims_list: Sequence[Claim]) -> list[int]:
    """Every seed any claim used (for the notebook's summary line)."""
    return sorted({s for c in claims_list for s in (c.seeds or ())})
