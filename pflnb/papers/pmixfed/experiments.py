"""pMixFed's numbers and views: the paper's Tables 1 and 3, the paper's mismatched evaluation protocol, and tidy
tables of the runs' records (unseen-client accuracies, pMixFed's internals μ and λ_i, the forced-collapse and
heterogeneous-depth analyses) that the notebook shows and the claims read. The experiments are declared in
:mod:`pflnb.papers.pmixfed.paper`."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from pflnb.algorithms.pmixfed import mu_sigmoid
from pflnb.data import ClientData, FederatedDataset, build_federated
from pflnb.experiments.claims import marked
from pflnb.experiments.config import ExperimentConfig
from pflnb.experiments.jobs import EvalProtocol, rebuilds_runs_under
from pflnb.experiments.paper import ExperimentResult
from pflnb.experiments.tables import curve_table

# ------------------------------------------------------------------------------------------ paper numbers
# Table 1 (CNN, unseen clients): (gap = before personalization, ft = after 2-epoch fine-tuning), percent.
PAPER_TABLE1: dict[str, dict[str, dict[str, tuple[float | None, float | None]]]] = {
    "N10": {
        "pmixfed": {"cifar10": (41.40, 62.34), "cifar100": (34.83, 48.88), "mnist": (79.42, 99.62)},
        "pmixfed-dynamic": {"cifar10": (45.67, 68.07), "cifar100": (32.30, 40.51), "mnist": (78.00, 99.37)},
        "fedavg": {"cifar10": (27.71, 59.04), "cifar100": (10.56, 18.97), "mnist": (76.17, 99.13)},
        "fedalt": {"cifar10": (39.38, 65.08), "cifar100": (13.54, 20.66), "mnist": (77.93, 98.88)},
        "fedsim": {"cifar10": (39.10, 65.03), "cifar100": (11.15, 18.94), "mnist": (78.49, 98.67)},
        "fedbabu": {"cifar10": (22.11, 58.35), "cifar100": (None, 14.48), "mnist": (None, 99.12)},
        "per-fedavg": {"cifar10": (None, 59.97), "cifar100": (None, 19.40), "mnist": (None, 99.33)},
        "lg-fedavg": {"cifar10": (None, 67.45), "cifar100": (18.97, 28.63), "mnist": (None, 99.14)},
        "pfedhn": {"cifar10": (None, 53.12), "cifar100": (None, 37.67), "mnist": (None, None)},
    },
    "N100": {
        "pmixfed": {"cifar10": (37.73, 60.27), "cifar100": (16.25, 22.71), "mnist": (None, None)},
        "pmixfed-dynamic": {"cifar10": (28.78, 56.89), "cifar100": (16.14, 22.42), "mnist": (74.39, 97.53)},
        "fedavg": {"cifar10": (41.97, 58.57), "cifar100": (7.90, 18.87), "mnist": (77.86, 98.05)},
        "fedalt": {"cifar10": (28.98, 47.93), "cifar100": (5.38, 10.65), "mnist": (74.80, 94.52)},
        "fedsim": {"cifar10": (26.40, 47.14), "cifar100": (6.28, 11.78), "mnist": (70.57, 87.37)},
        "fedbabu": {"cifar10": (14.78, 56.71), "cifar100": (2.25, 13.21), "mnist": (69.49, 98.02)},
        "per-fedavg": {"cifar10": (None, 60.58), "cifar100": (None, 22.42), "mnist": (None, 99.24)},
        "lg-fedavg": {"cifar10": (32.17, 53.13), "cifar100": (9.02, 21.20), "mnist": (None, 98.10)},
    },
}
# Table 2 (MobileNetV1, unseen clients), as Table 1.
PAPER_TABLE2: dict[str, dict[str, dict[str, tuple[float | None, float | None]]]] = {
    "N10": {
        "pmixfed": {"cifar10": (47.90, 82.17), "cifar100": (13.73, 69.90)},
        "pmixfed-dynamic": {"cifar10": (48.20, 81.69), "cifar100": (12.86, 70.64)},
        "fedavg": {"cifar10": (30.79, 47.08), "cifar100": (9.91, 37.62)},
        "fedalt": {"cifar10": (23.49, 72.25), "cifar100": (12.43, 63.73)},
        "fedsim": {"cifar10": (24.35, 70.19), "cifar100": (11.63, 64.00)},
        "fedbabu": {"cifar10": (11.67, 29.15), "cifar100": (7.41, 35.02)},
        "per-fedavg": {"cifar10": (None, 61.24), "cifar100": (None, 9.40)},
        "lg-fedavg": {"cifar10": (47.16, 71.22), "cifar100": (28.05, 36.22)},
    },
    "N100": {
        "pmixfed": {"cifar10": (29.22, 73.22), "cifar100": (15.43, 59.54)},
        "pmixfed-dynamic": {"cifar10": (29.09, 72.71), "cifar100": (15.10, 57.77)},
        "fedavg": {"cifar10": (16.76, 31.01), "cifar100": (1.03, 3.57)},
        "fedalt": {"cifar10": (19.34, 72.45), "cifar100": (4.07, 57.03)},
        "fedsim": {"cifar10": (19.37, 72.11), "cifar100": (4.08, 56.57)},
        "fedbabu": {"cifar10": (17.02, 29.56), "cifar100": (4.89, 10.53)},
        "per-fedavg": {"cifar10": (None, 57.59), "cifar100": (None, 13.60)},
        "lg-fedavg": {"cifar10": (36.31, 47.88), "cifar100": (5.01, 36.22)},
    },
}
PaperTable = dict[str, dict[str, dict[str, tuple[float | None, float | None]]]]
# The paper's own two versions (§5.1: "We compare two version of our method ... against several baselines"): the
# baselines of Tables 1-2 are every other row.
OWN_VARIANTS = ("pmixfed", "pmixfed-dynamic")
# Table 3 (Appendix E.1): client depth M_k → (λ_k, final accuracy %).
PAPER_TABLE3 = {3: (0.8, 85.2), 5: (0.7, 86.5), 7: (0.6, 87.3), 9: (0.5, 88.0), 11: (0.4, 88.5), 13: (0.3, 88.9)}


def paper_margin(
    table: PaperTable,
    setting: str,
    dataset: str,
    col: int,
    against: Sequence[str] | None = None,
    method: str = "pmixfed",
) -> tuple[float, str] | None:
    """``method``'s margin (default pMixFed; or the other of :data:`OWN_VARIANTS`) in one cell of the paper's ``table``
    (:data:`PAPER_TABLE1` or :data:`PAPER_TABLE2`; ``col`` 0: before, 1: after fine-tuning): (``method`` − the
    strongest of ``against`` with a value, in points, and its name); ``against`` defaults to every baseline (no row of
    :data:`OWN_VARIANTS`). None where ``method`` or every competitor has no value."""
    rows = table[setting]
    names = [m for m in rows if m not in OWN_VARIANTS] if against is None else list(against)
    mine = rows[method].get(dataset, (None, None))[col]
    values = {m: rows[m][dataset][col] for m in names if dataset in rows.get(m, {}) and rows[m][dataset][col] is not None}
    if mine is None or not values:
        return None
    strongest = max(values, key=values.get)
    return round(mine - values[strongest], 2), strongest


def paper_wins(table: PaperTable, against: Sequence[str] | None = None, method: str = "pmixfed") -> tuple[int, int]:
    """(cells of the paper's ``table`` where ``method`` (default pMixFed) is above every competitor of ``against`` with a
    value, cells where ``method`` and a competitor have values): the paper's own count behind "in most cases"."""
    margins = [
        paper_margin(table, setting, dataset, col, against, method)
        for setting, rows in table.items()
        for dataset in rows[method]
        for col in (0, 1)
    ]
    known = [m for m in margins if m is not None]
    return sum(m[0] > 0 for m in known), len(known)


# ------------------------------------------------------------------------------------------ protocols
def _derangement(m: int, rng: np.random.Generator) -> np.ndarray:
    if m < 2:
        return np.arange(m)
    while True:
        p = rng.permutation(m)
        if np.all(p != np.arange(m)):
            return p


def mismatch_test_splits(data: FederatedDataset, seed: int) -> FederatedDataset:
    """The paper's protocol (§5.2): a client's test split comes from a different, independent Dirichlet draw.

    Each client keeps its train and validation splits and receives the test split of another client
    (a random derangement, separately among seen and among unseen clients), so train and test class
    distributions differ, as when the train and test sets are partitioned independently."""
    rng = np.random.default_rng([int(seed), 0x4D15])

    def shuffle(clients: list[ClientData]) -> list[ClientData]:
        p = _derangement(len(clients), rng)
        return [dataclasses.replace(c, test=clients[int(j)].test) for c, j in zip(clients, p)]

    info = {**data.info, "protocol": "mismatched"}
    return dataclasses.replace(data, clients=shuffle(data.clients), unseen=shuffle(data.unseen), info=info)


# the paper's §5.2 protocol (part of the key)
MISMATCHED = rebuilds_runs_under(EvalProtocol("pmixfed-mismatched", mismatch_test_splits))


# ------------------------------------------------------------------------------------------ tables
def unseen_table(result: ExperimentResult) -> pd.DataFrame:
    """One row per run of ``result`` (its ``label``, ``dataset``, ``setting`` and ``seed``): mean unseen-client
    accuracy before / after fine-tuning and the seen clients' personalized accuracy (best-validation round and last
    round), in [0, 1]."""
    out = result.table[["label", "dataset", "setting", "seed"]].copy()
    for when in ("before", "after"):
        out[when] = [float(np.mean(r["unseen"][when])) if r.get("unseen") else np.nan for r in result.records]
    out["seen"] = result.table["test_acc"]
    out["seen_last"] = result.table["last_test_acc"]
    if "untuned" in result.table.columns:  # runs of an arm whose tuning found no value that trained
        out["untuned"] = result.table["untuned"]
    return out


def mu_table(records: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """One row per (run, round): aggregation μ_A, the global accuracy behind it, mean / min / max client μ_k,
    mean client accuracy used for μ_k, and λ^A of the base block; ``variant`` is the run's label."""
    rows = []
    for r in records:
        for e in r["rounds"]:
            mus = [m["mu"] for m in e["client_metrics"].values() if "mu" in m]
            accs = [m["acc_local"] for m in e["client_metrics"].values() if "acc_local" in m]
            internals = e.get("internals", {})
            rows.append(
                {
                    "method": r["config"]["method"],
                    "variant": r["label"],
                    "seed": r["config"]["seed"],
                    "round": e["round"],
                    "mu_agg": internals.get("mu_agg", np.nan),
                    "acc_global": internals.get("acc_global", np.nan),
                    "lam_agg_base": (internals.get("lam_agg") or [np.nan])[0],
                    "mu_client_mean": float(np.mean(mus)) if mus else np.nan,
                    "mu_client_min": float(np.min(mus)) if mus else np.nan,
                    "mu_client_max": float(np.max(mus)) if mus else np.nan,
                    "acc_local_mean": float(np.mean(accs)) if accs else np.nan,
                }
            )
    return pd.DataFrame(rows)


def depth_table(records: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """One row per (run, client) of ``pmixfed-hetero`` runs: the run's label (``variant``), the client's depth M_k and
    its test accuracy at the best mean-validation round and at the last round, in [0, 1]."""
    rows = []
    for r in records:
        cfg, summ = r["config"], r["summary"]
        depths = cfg["method_params"]["depths"]
        best = next(e for e in r["evals"] if e["round"] == summ["best_round"])
        for cid, (acc_best, acc_last) in enumerate(zip(best["test_acc"], r["evals"][-1]["test_acc"])):
            rows.append(
                {
                    "variant": r["label"],
                    "seed": cfg["seed"],
                    "client": cid,
                    "depth": int(depths[cid % len(depths)]),
                    "acc": acc_best,
                    "acc_last": acc_last,
                }
            )
    return pd.DataFrame(rows)


def depth_trend(df: pd.DataFrame, variant: str, metric: str = "acc") -> dict[str, float]:
    """Least-squares slope of accuracy (points) per added block over the clients of ``variant`` (pooled over seeds),
    its standard error, and the Spearman correlation of depth with the per-depth mean."""
    from scipy import stats

    d = df[df.variant == variant]
    fit = stats.linregress(d.depth.to_numpy(float), 100 * d[metric].to_numpy(float))
    means = d.groupby("depth")[metric].mean()
    rho = float(stats.spearmanr(means.index, means.values)[0]) if len(means) > 2 else float("nan")
    return {"slope": float(fit.slope), "slope_se": float(fit.stderr), "spearman_means": rho}


def majority_baseline(cfg: ExperimentConfig) -> dict[str, float]:
    """Accuracy of predicting each client's most frequent *training* label on its test split (client mean), for the
    seen and the unseen clients of ``cfg``'s dataset: the label-prior floor that personalization reaches for free."""
    data = build_federated(cfg.data_spec(), seed=cfg.seed)

    def acc(clients: list[ClientData]) -> float:
        vals = []
        for c in clients:
            top = int(np.bincount(c.train.y.cpu().numpy(), minlength=data.num_classes).argmax())
            vals.append(float((c.test.y.cpu().numpy() == top).mean()) if len(c.test) else np.nan)
        return float(np.nanmean(vals)) if vals else np.nan

    return {"seen": acc(data.clients), "unseen": acc(data.unseen)}


# ------------------------------------------------------------------------------------------ notebook tables
def _pm(mean: float, std: float) -> str:
    return f"{mean:.1f} ± {std:.1f}"


def mean_pm(df: pd.DataFrame, by: list[str], metrics: list[str]) -> pd.DataFrame:
    """'mean ± sd' strings (points, sample sd over seeds; 0 for one seed) of ``metrics`` (fractions) grouped by ``by``."""
    g = df.groupby(by, sort=False)[metrics]
    mean, std = g.mean() * 100, g.std(ddof=1).fillna(0.0) * 100
    return pd.DataFrame({m: [_pm(a, b) for a, b in zip(mean[m], std[m])] for m in metrics}, index=mean.index)


def table1(df: pd.DataFrame) -> pd.DataFrame:
    """Table 1 analogue: unseen 'before' / 'after' and seen accuracy (mean ± sd over seeds, points), one row per
    method, one column group per metric × dataset × setting (``df``: :func:`unseen_table`)."""
    out = mean_pm(df, ["dataset", "setting", "label"], ["before", "after", "seen"])
    return out.unstack(["dataset", "setting"]).swaplevel(0, 2, axis=1).sort_index(axis=1, level=[0, 1])


def paper_table1() -> pd.DataFrame:
    """The paper's Table 1 (CNN, unseen clients) as printed: one row per (setting, method); None = not reported."""
    rows = []
    for setting, methods in PAPER_TABLE1.items():
        for method, cols in methods.items():
            row: dict[str, Any] = {"setting": setting, "method": method}
            for ds, (gap, ft) in cols.items():
                row[f"{ds} gap"], row[f"{ds} ft"] = gap, ft
            rows.append(row)
    return pd.DataFrame(rows).set_index(["setting", "method"])


def label_floor(result: ExperimentResult, **overrides: Any) -> pd.DataFrame:
    """Majority-label accuracy (%, mean over seeds) of the seen and unseen clients of every (dataset, setting) cell of
    ``result`` (:func:`majority_baseline` of a run's data, the same for every method; ``overrides``: config fields
    such as ``data_root``)."""
    first = result.table.drop_duplicates(["dataset", "setting", "seed"])
    cols = {}
    for cell, rows in first.groupby(["dataset", "setting"], sort=False):
        cfgs = [ExperimentConfig.from_dict(result.records[i]["config"]).replace(**overrides) for i in rows.index]
        vals = [majority_baseline(cfg) for cfg in cfgs]
        cols[cell] = {k: 100 * float(np.mean([v[k] for v in vals])) for k in ("seen", "unseen")}
    out = pd.DataFrame(cols).round(1)
    out.index = ["majority label, seen clients (%)", "majority label, unseen clients (%)"]
    return out


def protocol_summary(main: pd.DataFrame, mismatched: pd.DataFrame) -> pd.DataFrame:
    """Matched (``main``) vs mismatched protocol on the mismatched runs' cell and methods: mean ± sd (points); both
    tables from :func:`unseen_table`."""
    cell = mismatched[["dataset", "setting"]].iloc[0]
    same = main[(main.dataset == cell.dataset) & (main.setting == cell.setting) & main.label.isin(mismatched.label.unique())]
    both = pd.concat([same.assign(protocol="matched"), mismatched.assign(protocol="mismatched")])
    return mean_pm(both, ["protocol", "label"], ["before", "after", "seen"]).unstack("protocol")


def per_seed(df: pd.DataFrame, metric: str, **where: Any) -> dict[int, float]:
    """{seed: mean of ``metric``} over the rows of ``df`` matching ``where`` (column = value), e.g. one method's
    unseen accuracy in one dataset × setting, or a seed-wise mean over datasets."""
    d = df
    for col, v in where.items():
        d = d[d[col] == v]
    if d.empty:
        raise ValueError(f"no rows with {where}")
    return marked({int(k): float(v) for k, v in d.groupby("seed")[metric].mean().items()}, d)


def mu_rule_residual(records: Iterable[dict[str, Any]]) -> float:
    """Largest |logged μ_k − Eq. 6 at the logged accuracy, round and horizon| and |μ_A − Eq. 6 at the global
    accuracy| over sigmoid-mode pMixFed records (0 when the logs follow the rule; NaN when there are none)."""
    errs = []
    for r in records:
        mp = r["config"]["method_params"]
        if r["config"]["method"] != "pmixfed" or mp.get("mu_mode", "sigmoid") != "sigmoid":
            continue
        b, horizon = float(mp.get("b", 1.0)), mp["horizon"]
        for e in r["rounds"]:
            pairs = [(m["mu"], m["acc_local"]) for m in e["client_metrics"].values() if "mu" in m]
            pairs.append((e["internals"]["mu_agg"], e["internals"]["acc_global"]))
            errs += [abs(mu - mu_sigmoid(acc, e["round"], horizon, b)) for mu, acc in pairs]
    return float(max(errs)) if errs else float("nan")


def shock_table(records: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Fig. 4 analogue, per (method, seed): the largest loss of seen-client accuracy (points) caused by the shock
    at or after the shock round, and the loss at the last round, from paired runs with and without the shock."""
    acc: dict[tuple[str, int, bool], dict[int, float]] = {}
    shock_round = 0
    for r in records:
        cfg = r["config"]
        sr = int(cfg["method_params"].get("shock_round", 0))
        shock_round = max(shock_round, sr)
        acc[(cfg["method"], cfg["seed"], sr > 0)] = {e["round"]: float(np.mean(e["test_acc"])) for e in r["evals"]}
    rows = []
    for (method, seed, shocked), curve in sorted(acc.items()):
        if not shocked or (method, seed, False) not in acc:
            continue
        base = acc[(method, seed, False)]
        after = [t for t in curve if t >= shock_round and t in base]
        if not after:
            raise ValueError(f"{method} seed {seed}: no evaluation at or after the shock round {shock_round}")
        drops = [100 * (base[t] - curve[t]) for t in after]
        rows.append({"method": method, "seed": seed, "shock_round": shock_round, "max_drop": max(drops), "final_gap": drops[-1]})
    return pd.DataFrame(rows)


def shock_curves(records: Sequence[dict[str, Any]]) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """Fig. 4 analogue data: the learning curves of the shock runs with their label as ``run`` (method / shock or
    none), the μ table of the pMixFed runs with ``run`` shock or none, and the shock round."""

    def tag(r: dict[str, Any]) -> str:
        return "shock" if r["config"]["method_params"].get("shock_round") else "none"

    curves = curve_table(records)
    curves["run"] = [r["label"] for r in records for _ in r["evals"]]
    pm = [r for r in records if r["config"]["method"] == "pmixfed"]
    mu = mu_table(pm)
    mu["run"] = [tag(r) for r in pm for _ in r["rounds"]]
    rounds = [int(r["config"]["method_params"].get("shock_round", 0)) for r in records]
    return curves, mu, max(rounds)


def depth_summary(depth: pd.DataFrame) -> pd.DataFrame:
    """Table 3 analogue: per variant and client depth, accuracy mean ± sd (points, over clients and seeds), with the
    paper's Table 3 row."""
    g = depth.groupby(["variant", "depth"], sort=False).acc
    mean, std = g.mean() * 100, g.std(ddof=1).fillna(0.0) * 100
    tab = pd.Series([_pm(a, b) for a, b in zip(mean, std)], index=mean.index).unstack("depth")
    tab.loc["paper (Table 3, pMixFed)"] = [f"{PAPER_TABLE3[d][1]:.1f}" if d in PAPER_TABLE3 else "" for d in tab.columns]
    return tab


def depth_slopes(depth: pd.DataFrame, variant: str) -> dict[int, float]:
    """{seed: least-squares slope of client accuracy (points) on client depth} for one Table 3 variant."""
    out = {}
    for seed, d in depth[depth.variant == variant].groupby("seed"):
        out[int(seed)] = float(np.polyfit(d.depth.to_numpy(float), 100 * d.acc.to_numpy(float), 1)[0])
    return out
