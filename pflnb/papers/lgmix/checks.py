"""LG-Mix's theory checks (spec §3, T1–T8) and the analyses behind its figures, as functions the notebook calls.

Each check returns its numbers and whether it passes its stated criterion; the notebook displays and plots them,
and :mod:`pflnb.papers.lgmix.claims` turns them into verdicts.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch
from scipy.stats import pearsonr, spearmanr

from pflnb.experiments.claims import marked
from pflnb.experiments.tables import mean_std
from pflnb.models import build_model
from pflnb.theory import ntk as T


def theory_sizes(profile: str) -> dict[str, Any]:
    """Sizes of the theory checks: Monte Carlo trials, network widths, the Theorem 1 simulation, and the model and
    sample counts the trace's cost is timed on (:func:`trace_cost`)."""
    small = profile == "smoke"
    return dict(
        trials=8 if small else 30,
        width=1000 if small else 2000,
        widths=(256, 1024, 4096) if small else (256, 1024, 4096, 16384),
        sim_m=1024 if small else 4096,
        sim_rounds=10 if small else 30,
        # the trace's cost: an 8×8-input MLP below the paper profile; at it the paper's DigitModel at 28 px (App. D.1,
        # its full-Jacobian trace 4 samples at a time: 2.3 GB) up to n = 1,024 samples, past its m = 512 features (the
        # paper's case: "the number of samples is typically much larger than the last-layer feature dimension")
        cost_sizes=(16, 64) if small else (128, 1024) if profile == "paper" else (16, 64, 128),
        cost_model=dict(model="digit", image_size=28, chunk=4) if profile == "paper" else dict(model="mlp", image_size=8),
    )


@dataclass
class T1Result:
    """T1: Prop. 1's linear dynamics — Monte Carlo error ratio vs (1/n)Σ(1 − ηs)² vs 1 − 2η tr(H)/n."""

    monte_carlo: float
    exact: float
    linear: float
    mc_error: float  # |MC − exact|; tolerance 1e-3 (20,000 draws)
    identity_error: float  # |(exact − linear) − η² tr(H²)/n|; tolerance 1e-12

    @property
    def passes(self) -> bool:
        """Both parts within their stated tolerances."""
        return self.mc_error < 1e-3 and self.identity_error < 1e-12


def t1_linear_dynamics(seed: int = 0, n: int = 100, eta: float = 0.01, draws: int = 20000) -> T1Result:
    """Prop. 1 on e ↦ (I − ηH)e with isotropic e: Monte Carlo against its closed form and the linear rate."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n))
    h = a @ a.T / n
    s = np.linalg.eigvalsh(h)
    xi = rng.standard_normal((draws, n))
    mc = float((((xi @ (np.eye(n) - eta * h)) ** 2).sum(1) / (xi**2).sum(1)).mean())
    exact, linear = T.prop1_exact_rate(s, eta), T.prop1_linear_rate(s, eta)
    ident = abs((exact - linear) - eta**2 * np.trace(h @ h) / n)
    return T1Result(mc, exact, linear, abs(mc - exact), float(ident))


def _t2_stream(seed: int) -> tuple[np.random.Generator, np.ndarray]:
    """The generator after T1's draws (one stream for T1 and T2, as in the earlier notebook) and T2's inputs."""
    rng = np.random.default_rng(seed)
    rng.standard_normal((100, 100))
    rng.standard_normal((20000, 100))
    return rng, T.unit_rows(rng.standard_normal((50, 10)))


def t2_one_step(trials: int, width: int, seed: int = 0, etas: Sequence[float] = (0.01, 0.02, 0.05, 0.1, 0.2)) -> pd.DataFrame:
    """T2: one GD step of the two-layer ReLU net (n = 50, d = 10): observed error ratio vs Prop. 1's linear and
    exact rates per η (antisymmetric init: isotropic error), and the ratio under an ordinary init."""
    rng, x = _t2_stream(seed)
    rows = []
    for eta in etas:
        for _ in range(trials):
            r, eig = T.one_step_ratio(x, rng.standard_normal(50), width, eta, rng)
            rows.append(
                dict(
                    eta=eta, observed=r, linear=T.prop1_linear_rate(eig, eta), exact=T.prop1_exact_rate(eig, eta), tr_n=eig.mean()
                )
            )
        r, eig = T.one_step_ratio(x, x @ rng.standard_normal(10), width, eta, rng, antisymmetric=False)
        rows.append(dict(eta=eta, ordinary_init=r))
    return pd.DataFrame(rows).groupby("eta").mean()


def t2_passes(t2: pd.DataFrame) -> dict[str, bool]:
    """T2's criteria: tr(H(0))/n = ½ (±0.01), observed ≈ linear at η = 0.01 (±0.003), observed ≈ exact (±0.015)."""
    return {
        "trace_half": bool(abs(t2.tr_n.mean() - 0.5) < 0.01),
        "linear_at_0.01": bool(abs(t2.loc[0.01, "observed"] - t2.loc[0.01, "linear"]) < 0.003),
        "exact": bool((t2.observed - t2.exact).abs().max() < 0.015),
    }


def t3_input_scale(
    trials: int, width: int, scales: Sequence[float] = (0.5, 1.0, 1.5, 2.0), steps: int = 10, eta: float = 0.05
) -> pd.DataFrame:
    """T3: GD error curves ‖y − f‖²/‖y‖² of the two-layer net with inputs scaled by c (H scales by c²)."""
    _, x = _t2_stream(0)
    curves = {}
    for c in scales:
        errs = []
        for k in range(trials):
            w, a = T.two_layer_init(10, width, np.random.default_rng(100 + k))
            y = np.random.default_rng(200 + k).standard_normal(50)
            e = [1.0]
            for _ in range(steps):
                w = w - eta * T.two_layer_grad(w, a, c * x, y)
                r = y - T.two_layer_forward(w, a, c * x)
                e.append(float(r @ r / (y @ y)))
            errs.append(e)
        curves[c] = np.mean(errs, 0)
    return pd.DataFrame(curves).rename_axis(index="step", columns="scale")


def t3_faster_with_trace(t3: pd.DataFrame) -> bool:
    """T3's criterion: the one-step error ratio falls as the input scale (and so tr(H)) grows."""
    return bool(np.all(np.diff(t3.iloc[1].to_numpy()) < 0))


def t4_jacobian(width: int = 512) -> dict[str, float]:
    """T4: max |JJᵀ − H| for the first-layer Jacobian, and torch.func's NTK trace − (tr H + m·tr Ĥ)."""
    x60 = T.unit_rows(np.random.default_rng(4).standard_normal((60, 10)))
    w, a = T.two_layer_init(10, width, np.random.default_rng(5), antisymmetric=False)
    j = T.two_layer_jacobian(w, a, x60[:20])
    gram = float(np.max(np.abs(j @ j.T - T.relu_gram(w, x60[:20]))))
    net = torch.nn.Sequential(
        torch.nn.Linear(10, width, bias=False), torch.nn.ReLU(), torch.nn.Linear(width, 1, bias=False)
    ).double()
    with torch.no_grad():
        net[0].weight.copy_(torch.from_numpy(w))
        net[2].weight.copy_(torch.from_numpy(a / np.sqrt(width))[None])
    tr = T.ntk_trace(net, torch.from_numpy(x60[:20]))
    func = abs(tr - np.trace(j @ j.T) - width * np.trace(T.feature_gram(w, x60[:20])))
    return {"gram_error": gram, "torch_func_error": float(func)}


def t5_width(widths: Sequence[int]) -> tuple[pd.DataFrame, dict[str, float]]:
    """T5: finite-width kernels H, Ĥ against H∞, Ĥ∞ by width (relative Frobenius error), the Eq. (5) identity
    tr(Ĥ) = tr(Σ)/m, the log-log slopes (expected −½) and the kernel alignment of H and Ĥ at the widest net."""
    x60 = T.unit_rows(np.random.default_rng(4).standard_normal((60, 10)))
    h_inf, hh_inf = T.h_inf(x60), T.h_hat_inf(x60)
    rows = []
    for m in widths:
        wm, _ = T.two_layer_init(10, m, np.random.default_rng(m), antisymmetric=False)
        hm = np.maximum(x60 @ wm.T, 0)
        rows.append(
            dict(
                m=m,
                err_H=np.linalg.norm(T.relu_gram(wm, x60) - h_inf) / np.linalg.norm(h_inf),
                err_Hhat=np.linalg.norm(T.feature_gram(wm, x60) - hh_inf) / np.linalg.norm(hh_inf),
                trace_Hhat=np.trace(T.feature_gram(wm, x60)),
                trace_Sigma_over_m=T.feature_trace_np(hm) / m,
                tr_H_over_n=np.trace(T.relu_gram(wm, x60)) / 60,
            )
        )
    t5 = pd.DataFrame(rows).set_index("m")
    stats = {
        "eq5_max_rel_error": float(((t5.trace_Hhat - t5.trace_Sigma_over_m).abs() / t5.trace_Hhat).max()),
        "slope_H": float(np.polyfit(np.log(t5.index), np.log(t5.err_H), 1)[0]),
        "slope_Hhat": float(np.polyfit(np.log(t5.index), np.log(t5.err_Hhat), 1)[0]),
        "alignment": T.kernel_alignment(T.relu_gram(wm, x60), T.feature_gram(wm, x60)),
        "alignment_centred": T.kernel_alignment(T.relu_gram(wm, x60), T.feature_gram(wm, x60), centered=True),
    }
    return t5, stats


@dataclass
class T7Result:
    """T7: spectra of H∞ and of its client blocks H_c (Cauchy interlacing)."""

    spectrum: np.ndarray
    blocks: list[np.ndarray]
    interlacing_violation: float  # max over blocks of (s_min(H) − s_min(H_c))⁺ and (s_max(H_c) − s_max(H))⁺
    trace_error: float  # |tr(blockdiag(H)) − tr(H)|

    @property
    def passes(self) -> bool:
        """Interlacing holds and the block-diagonal keeps the trace, to 1e-12."""
        return self.interlacing_violation <= 1e-12 and self.trace_error < 1e-12


def t7_interlacing(clients: int = 4, per_client: int = 15) -> T7Result:
    """T7: s_min(H_c) ≥ s_min(H) and s_max(H_c) ≤ s_max(H) for clustered clients (feature shift)."""
    xs = T.clustered_clients(clients, per_client, 10, 0.8, np.random.default_rng(6))
    h = T.h_inf(np.concatenate(xs))
    s = T.spectrum(h)
    blocks = [T.spectrum(h[per_client * c : per_client * (c + 1), per_client * c : per_client * (c + 1)]) for c in range(clients)]
    viol = max(max(s[-1] - b[-1], b[0] - s[0], 0.0) for b in blocks)
    tr = abs(np.trace(T.block_diagonal(h, [per_client] * clients)) - np.trace(h))
    return T7Result(s, blocks, float(viol), float(tr))


@dataclass
class T8Result:
    """T8: LG-Mix on the two-layer net — per-round errors against Theorem 1's bound and Lemma 4's linear model."""

    table: pd.DataFrame
    runs: dict[float, tuple[Any, np.ndarray, np.ndarray]] = field(repr=False)  # λ → (sim result, bound, linear residuals)

    @property
    def violations(self) -> int:
        """Rounds where the error exceeds its bound, over every λ."""
        return int(self.table.violations.sum())

    @property
    def rounds_checked(self) -> int:
        """Rounds checked against a bound, over every row of the table."""
        return int(self.table.rounds.sum())


def t8_theorem1(sim_m: int, sim_rounds: int, lams: Sequence[float] = (0.0, 0.25, 0.5, 0.75, 1.0)) -> T8Result:
    """T8: N = 4 clusters of 10 samples, K = 5 GD steps per round, η_l = 0.05, η_g = 1; uniform λ and per-client λ_c."""
    rng8 = np.random.default_rng(7)
    xs8 = T.clustered_clients(4, 10, 8, 0.8, rng8)
    ys8 = [rng8.standard_normal(10) for _ in range(4)]
    h8 = T.h_inf(np.concatenate(xs8))
    smin = T.spectrum(h8)[-1]
    smin_c = [T.spectrum(h8[10 * c : 10 * (c + 1), 10 * c : 10 * (c + 1)])[-1] for c in range(4)]
    runs, rows = {}, []
    for lam in lams:
        res = T.federated_two_layer(xs8, ys8, sim_m, lam, sim_rounds, 5, 0.05, 1.0, np.random.default_rng(1))
        bound = T.theorem_bound(res.err, res.err_clients, lam, smin, smin_c, 5, 0.05, 1.0)
        lin = T.linear_residuals(T.lemma4_matrix(h8, [10] * 4, lam, 5, 0.05, 1.0), res.residuals[0], sim_rounds)
        dev = np.abs(np.linalg.norm(lin, axis=1) - np.sqrt(res.err)) / np.sqrt(res.err)
        runs[lam] = (res, bound, lin)
        rows.append(
            dict(
                lam=lam,
                rounds=len(bound),
                violations=int((res.err[1:] > bound).sum()),
                err_start=res.err[0],
                err_final=res.err[-1],
                min_slack=float((bound - res.err[1:]).min()),
                lemma4_max_rel_dev=dev.max(),
            )
        )
    lam_c = np.random.default_rng(8).uniform(0.1, 0.9, 4)
    res2 = T.federated_two_layer(xs8, ys8, sim_m, lam_c, sim_rounds, 5, 0.05, 1.0, np.random.default_rng(1))
    for mode in ("each", "min"):
        b2 = T.theorem_bound(res2.err, res2.err_clients, lam_c, smin, smin_c, 5, 0.05, 1.0, mode)
        rows.append(
            dict(
                lam=f"λ_c ~ U(.1,.9), sum with λ_{mode}",
                rounds=len(b2),
                violations=int((res2.err[1:] > b2).sum()),
                err_start=res2.err[0],
                err_final=res2.err[-1],
                min_slack=float((b2 - res2.err[1:]).min()),
            )
        )
    return T8Result(pd.DataFrame(rows), runs)


def t8_decay_order(t8: T8Result) -> bool:
    """Larger uniform λ ends with a smaller error (the uniform-λ rows in increasing λ)."""
    finals = t8.table.err_final.iloc[: len(t8.runs)].to_numpy()
    return bool(np.all(np.diff(finals) < 0))


def t6b_stats(ntk: pd.DataFrame) -> dict[str, float]:
    """T6b: agreement of λ from last-layer features with λ from the full empirical-NTK trace (a :func:`ntk_table`).

    Round 1's pairs are both exactly ½ (w_c = u): they are checked on their own and left out of the agreement
    statistics, which they would inflate."""
    first = ntk[ntk["round"] == ntk["round"].min()]
    ntk = ntk[ntk["round"] > ntk["round"].min()]
    return {
        "pairs": len(ntk),
        "spearman": float(spearmanr(ntk.lambda_feat, ntk.lambda_ntk).statistic),
        "pearson": float(pearsonr(ntk.lambda_feat, ntk.lambda_ntk).statistic),
        "mean_abs_diff": float((ntk.lambda_feat - ntk.lambda_ntk).abs().mean()),
        "same_side": float(((ntk.lambda_feat - 0.5) * (ntk.lambda_ntk - 0.5) >= 0).mean()),
        "spearman_last_block": float(spearmanr(ntk.lambda_feat, ntk.lambda_ntk_last).statistic),
        "round1_max_dev_from_half": float((first[["lambda_feat", "lambda_ntk"]] - 0.5).abs().to_numpy().max()),
    }


def t6b_passes(stats: dict[str, float]) -> bool:
    """The spec's T6b criterion: Spearman > 0.9 and mean |λ_feat − λ_NTK| < 0.05."""
    return stats["spearman"] > 0.9 and stats["mean_abs_diff"] < 0.05


def _time(fn: Any, reps: int) -> float:
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t) / reps


def trace_cost(
    sizes: Sequence[int], seed: int = 0, model: str = "mlp", image_size: int = 8, chunk: int | None = None
) -> pd.DataFrame:
    """Milliseconds for Eq. (6)'s feature trace, the Jacobian-free dense NTK trace (NaN for a model with layers other
    than nn.Linear, e.g. the DigitModel's convolutions) and the full-Jacobian NTK trace (``chunk`` samples at a time)
    of ``model`` (a :func:`~pflnb.models.build_model` name, RGB ``image_size`` inputs, 10 classes) on n random inputs
    (wall time on this machine; ``benchmarks/lgmix_trace_cost.py`` sweeps more)."""
    torch.manual_seed(seed)
    net = build_model(model, (3, image_size, image_size), 10).eval()
    xb = torch.rand(max(sizes), 3, image_size, image_size)
    rows = []
    for n in sizes:
        x = xb[:n]
        with torch.no_grad():
            feat = _time(lambda x=x: float((net.features(x) ** 2).sum()), 3)
        try:
            dense = _time(lambda x=x: T.dense_ntk_trace(net, x), 3)
        except ValueError:  # a model with parameters outside nn.Linear layers (the DigitModel's convolutions)
            dense = float("nan")
        full = _time(lambda x=x: T.ntk_trace(net, x, chunk), 1)
        rows.append(dict(n=n, feature_trace_ms=1e3 * feat, dense_ntk_trace_ms=1e3 * dense, full_jacobian_ntk_trace_ms=1e3 * full))
    cost = pd.DataFrame(rows).set_index("n")
    cost["speedup_vs_full"] = cost.full_jacobian_ntk_trace_ms / cost.feature_trace_ms
    return cost


# ------------------------------------------------------------------------------------------- experiment analyses


def lambda_course(lam: pd.DataFrame) -> pd.DataFrame:
    """Per seed: client-mean raw λ in the first and last round, and the mean round-to-round |Δλ| (raw and used)."""
    rows = []
    for seed, g in lam.groupby("seed"):
        by_round = g.groupby("round")[["lambda_raw", "lambda"]].mean()
        steps = g.sort_values("round").groupby("client")
        rows.append(
            dict(
                seed=seed,
                first=float(by_round.lambda_raw.iloc[0]),
                last=float(by_round.lambda_raw.iloc[-1]),
                var_raw=float(steps.lambda_raw.apply(lambda s: s.diff().abs().mean()).mean()),
                var_used=float(steps["lambda"].apply(lambda s: s.diff().abs().mean()).mean()),
            )
        )
    return pd.DataFrame(rows).set_index("seed")


def final_alpha(apfl: pd.DataFrame) -> pd.Series:
    """Per seed: APFL's adaptive α at the last round, averaged over clients."""
    last = apfl[apfl["round"] == apfl["round"].max()]
    return last.groupby("seed")["lambda"].mean()


def ablation_table(summ: pd.DataFrame, lam: pd.DataFrame) -> pd.DataFrame:
    """Table 4: mean ± sd accuracy and worst client per ablation, seed std, and the final λ (raw and used)."""
    final = lam[lam["round"] == lam["round"].max()].groupby("label", sort=False)[["lambda_raw", "lambda"]].mean()
    table = mean_std(summ, by=["label"], metrics=["test_acc", "worst_client"]).set_index("label")
    table = table.join(final.rename(columns={"lambda_raw": "final λ_raw", "lambda": "final λ used"}).round(3))
    table["std over seeds"] = (summ.groupby("label", sort=False).test_acc.std() * 100).round(2)
    return table


def feature_gap(feats: pd.DataFrame, a: str = "LG-Mix", b: str = "FedAvg") -> pd.DataFrame:
    """Per (seed, client): mean penultimate activation of ``a``'s and ``b``'s models and their difference."""
    means = feats.groupby(["seed", "client", "label"], sort=False).value.mean().unstack()
    return means.assign(gap=means[a] - means[b])


def head_distance_margin(dist: pd.DataFrame) -> pd.Series:
    """Per seed: relative parameter distance to the global model of the output layer minus the largest other layer's."""
    p = dist[dist.kind == "parameters"].groupby(["seed", "module"], sort=False).relative.mean().unstack()
    head = [c for c in p.columns if c.startswith("head")]
    if not head:
        raise ValueError(f"no output layer ('head…') among the modules {list(p.columns)}")
    return p[head].max(axis=1) - p.drop(columns=head).max(axis=1)


def per_seed(summ: pd.DataFrame, label: str, col: str = "test_acc") -> dict[int, float]:
    """{seed: value} of one label in a table with label, seed and ``col`` columns (the verdict rule's input)."""
    rows = summ[summ.label == label]
    if rows.empty:
        raise ValueError(f"no rows labelled {label!r}; labels are {sorted(summ.label.unique())}")
    if rows.seed.duplicated().any():
        raise ValueError(f"several rows per seed for {label!r}: aggregate first")
    return marked(dict(zip(rows.seed.astype(int), rows[col].astype(float))), rows)


def train_loss_by_seed(cur: pd.DataFrame) -> pd.DataFrame:
    """Per (label, seed): the training loss of the local epoch averaged over rounds (Fig. 4's ranking quantity)."""
    return cur.groupby(["label", "seed"], sort=False).train_loss.mean().reset_index()
