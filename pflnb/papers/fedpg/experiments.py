"""FedPG paper notebook support: the P-model job and metrics L-acc, S-acc, G-acc and GM acc, the Fig. 5 evaluation
protocol, the notebook's tables, and the views of the records the claims read (per-seed P-model values, logged
internals, Fig. 5 curve statistics, results renamed for an analogue): views of the runs of
:mod:`pflnb.papers.fedpg.paper`'s experiments.

Metrics (spec fedpg.md §4, ambiguity A16, the authors' pooled-subsample reading):
- **L-acc_i** = accuracy of client i's P-model on its own test set D_i;
- **S-acc_i(c)** = accuracy of P-model i on a fixed random subsample of size |D_i| of the pooled test sets of
  client i and K_i = round_half_up(c·(m−1)) other clients chosen at random (c = 0: L-acc, c = 1: G-acc);
- **G-acc_i** = S-acc_i(1): a subsample of size |D_i| of the union of all clients' test sets;
- **GM acc** = the G-model evaluated on the same samples as G-acc_i, averaged over clients.

P-models: the method's own evaluated model (``eval_module``) for personalized methods; for methods without
personalization (FedProx, FedMGDA+) the G-model trained ``local_epochs`` more epochs on the client's train
split, i.e. a local-training result started from the G-model (the FedROD protocol the paper follows).

Fig. 5 (S-acc vs round, Pat-2, full participation): the runs' protocol :data:`S_ACC` swaps each client's test split
for its S-acc(½) sample so that the engine's per-round test accuracy is the S-acc.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import torch

from pflnb.algorithms import make_algorithm
from pflnb.algorithms.partial import PartialFedAvg
from pflnb.data import FederatedDataset
from pflnb.data.federated import Split
from pflnb.experiments.claims import marked
from pflnb.experiments.config import ExperimentConfig
from pflnb.experiments.jobs import ConfigJob, EvalProtocol, RunJob, check_record, digest, rebuilds, rebuilds_runs_under
from pflnb.experiments.paper import ExperimentResult
from pflnb.experiments.run import reopen
from pflnb.experiments.tables import curve_table, mean_std
from pflnb.fl.training import train_epochs
from pflnb.theory.mgda import personalization_gammas

FIG4_CS = (0.0, 0.01, 0.1, 0.3, 0.5, 0.7, 1.0)
S_ACC_C = 0.5

FRESH_LABELS = ("FedPG", "S-FedPG")  # the runs also scored under protocol P2 (extra row, γ sweep)


@dataclasses.dataclass(frozen=True)
class PModelJob(ConfigJob):
    """A run of ``cfg`` and the P-model metrics of its final states (one job, since final states are not cached):
    the run's record with ``pm`` (protocol P1: the stored P-models, :func:`final_pm_scores`) and, with ``fresh``
    (FedPG methods), ``pm_fresh`` (protocol P2 variants, :func:`fresh_pm_scores`). ``checkpoint_every`` k saves the
    run's resumable state every k rounds (the plain run's checkpoint: the same config, the same states)."""

    fresh: bool = False
    cs: tuple[float, ...] = FIG4_CS
    checkpoint_every: int = 0

    def key(self) -> str:
        return digest("p-model scores", self.cfg.key(), self.fresh, list(self.cs))

    def label(self) -> str:
        return f"pm-{self.cfg.method}"

    def details(self) -> dict[str, Any]:
        return {**self.describe(), "fresh": self.fresh, "config": self.cfg.to_dict()}

    def discard_partial(self, root: Any) -> None:
        RunJob(self.cfg).discard_partial(root)  # the checkpoint of the run it scores (``force`` starts from scratch)

    def check(self, record: Any, path: Any) -> dict[str, Any]:
        check_record(record, path)
        if "pm" not in record or (self.fresh and "pm_fresh" not in record):
            raise ValueError(f"cached record {path} has no P-model scores; delete it or re-run with force=True")
        return record

    def compute(self, root: Any, progress: bool = False) -> dict[str, Any]:
        # the driver caches this job's record alone
        runs = reopen(self.cfg, progress=progress, cache=False, checkpoint_every=self.checkpoint_every, root=root)
        record = {**runs.record, "pm": final_pm_scores(runs, self.cs)}
        if self.fresh:
            record["pm_fresh"] = fresh_pm_scores(runs, cs=self.cs)
        return record


@rebuilds
def _p_model_job(record: dict[str, Any]) -> PModelJob | None:
    """The :class:`PModelJob` behind a record with P-model scores (``pm``; ``pm_fresh`` with protocol P2)."""
    if "pm" not in record:
        return None
    return PModelJob(ExperimentConfig.from_dict(record["config"]), fresh="pm_fresh" in record, cs=tuple(record["pm"]["cs"]))


# ---------------------------------------------------------------------------------------------- metrics


def round_half_up(x: float) -> int:
    """⌊x + ½⌋ (round half up, unlike Python's banker's rounding)."""
    return int(np.floor(x + 0.5))


def mixing_sample(sizes: list[int], i: int, c: float, seed: int) -> np.ndarray:
    """Positions (in the pooled test set, clients in order) of client i's S-acc(c) sample: D_i pooled with the
    test sets of round_half_up(c·(m−1)) random other clients, subsampled to |D_i| without replacement."""
    m = len(sizes)
    if not 0.0 <= c <= 1.0:
        raise ValueError(f"c must be in [0, 1], got {c}")
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    rng = np.random.default_rng([int(seed), int(i), round_half_up(1000 * c), 0xFED])
    others = np.array([j for j in range(m) if j != i], dtype=np.int64)
    chosen = rng.choice(others, size=min(round_half_up(c * (m - 1)), m - 1), replace=False)
    members = np.sort(np.concatenate([[i], chosen])).astype(np.int64)
    pool = np.concatenate([np.arange(offsets[j], offsets[j + 1]) for j in members])
    if members.size == 1:
        return pool
    return np.sort(rng.choice(pool, size=sizes[i], replace=False))


@torch.no_grad()
def _correct(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> np.ndarray:
    model.eval()
    return (model(x).argmax(1) == y).cpu().numpy()


def pm_scores(pmodel_fn: Any, gmodel: Any, tests: list[Any], cs: tuple[float, ...] = FIG4_CS, seed: int = 0) -> dict[str, Any]:
    """Per-client S-acc(c) of the P-models (``pmodel_fn(i)`` → module) and of the G-model (``gmodel``: module or
    None) for every c in ``cs`` (c = 0: L-acc, c = 1: G-acc), on the fixed subsamples of :func:`mixing_sample`."""
    sizes = [len(t) for t in tests]
    X = torch.cat([t.x for t in tests])
    Y = torch.cat([t.y for t in tests])
    gm_correct = _correct(gmodel, X, Y) if gmodel is not None else None
    pm: dict[str, list[float]] = {str(c): [] for c in cs}
    gm: dict[str, list[float]] = {str(c): [] for c in cs}
    for i in range(len(tests)):
        samples = {c: mixing_sample(sizes, i, c, seed) for c in cs}
        needed = np.unique(np.concatenate(list(samples.values())))
        idx = torch.as_tensor(needed, device=X.device)
        ok = _correct(pmodel_fn(i), X[idx], Y[idx])
        pos = {int(v): k for k, v in enumerate(needed)}
        for c, smp in samples.items():
            pm[str(c)].append(float(np.mean(ok[[pos[int(v)] for v in smp]])))
            if gm_correct is not None:
                gm[str(c)].append(float(np.mean(gm_correct[smp])))
    return {"cs": list(cs), "pm": pm, "gm": gm if gm_correct is not None else None, "test_sizes": sizes}


def has_global_model(algorithm: Any, ctx: Any) -> bool:
    """False for methods whose server model lacks part of the network (Local; FedRep's personal head)."""
    if isinstance(algorithm, PartialFedAvg):
        return not algorithm.personal_keys(ctx)
    return True


def final_pm_scores(runs: Any, cs: tuple[float, ...] = FIG4_CS) -> dict[str, Any]:
    """S-acc(c) curves of a finished run's P-models and G-model (``runs``: the run, :func:`~pflnb.experiments.run.reopen`)."""
    algorithm, data, ctx = runs.algorithm, runs.data, runs.context()
    global_ok = has_global_model(algorithm, ctx)
    gmodel = runs.model() if global_ok else None

    def pmodel(i: int) -> torch.nn.Module:
        if algorithm.personalized:
            return algorithm.eval_module(ctx, i, runs.server, runs.clients[i])
        model = ctx.load(runs.server["model"], "pm")
        train_epochs(model, data.clients[i].train, ctx.optim, ctx.generator("pm-local", i))
        return model

    out = pm_scores(pmodel, gmodel, [c.test for c in data.clients], cs, runs.cfg.seed)
    out["pm_protocol"] = "own" if algorithm.personalized else "local-training from the G-model"
    return out


# Re-personalisations of one FedPG G-model under protocol P2: label -> (user γ, combination rule).
FRESH_VARIANTS: dict[str, tuple[float | None, str]] = {
    "auto": (None, "max"),
    "γ=0 (M3)": (0.0, "override"),
    "γ=0.1": (0.1, "max"),
    "γ=0.3": (0.3, "max"),
    "γ=0.6": (0.6, "max"),
    "γ=1.0": (1.0, "max"),
}


def fresh_pm_scores(
    runs: Any, variants: dict[str, tuple[float | None, str]] | None = None, cs: tuple[float, ...] = FIG4_CS
) -> dict[str, Any]:
    """Protocol P2 (spec §2.7, A8) for a finished FedPG run (``runs``: :func:`~pflnb.experiments.run.reopen`): one
    virtual round with every client online at the final G-model ω^T (direction over all clients, γ_i with constraints
    over all j ≠ i, the run's step rule), then P-models ω^T + η d_i for each γ variant; the G-model of this round
    ω^T + η d is the GM."""
    cfg = runs.cfg
    variants = FRESH_VARIANTS if variants is None else variants
    algorithm = make_algorithm(cfg.method, {**cfg.method_params, "track_losses": False, "track_absent": False})
    ctx = runs.context(optim_round=cfg.rounds + 1)
    server, clients = runs.server, runs.clients
    messages = {c: algorithm.local_train(ctx, c, server, clients[c]).message for c in range(ctx.num_clients)}
    new = algorithm.aggregate(ctx, server, messages)
    info, internals = new["round_info"], new.get("internals", {})
    online, auto = info["online"], np.asarray(internals.get("gamma_auto", []))
    gmodel = runs.model(new["model"])
    tests = [c.test for c in runs.data.clients]
    out: dict[str, Any] = {"gamma_auto": auto.tolist(), "eta": info["eta"], "variants": {}}
    for label, (gamma, rule) in variants.items():
        gam = personalization_gammas(auto, gamma, rule) if len(auto) else auto
        srv = {**new, "round_info": {**info, "gamma": dict(zip(online, gam.tolist()))}}

        def pmodel(i: int, srv=srv) -> torch.nn.Module:
            pm = algorithm.after_aggregate(ctx, i, srv, clients[i])["pmodel"]
            return ctx.load(pm, "pm")

        out["variants"][label] = pm_scores(pmodel, gmodel, tests, cs, cfg.seed)
    return out


def _scores(record: dict[str, Any], variant: str | None) -> dict[str, Any]:
    return record["pm"] if variant is None else record["pm_fresh"]["variants"][variant]


def pm_table(records: list[dict[str, Any]], labels: list[str], c_s: float = S_ACC_C, variant: str | None = None) -> pd.DataFrame:
    """One row per run: label, seed, client-mean L-acc, S-acc(c_s), G-acc, GM acc and their client stds
    (``variant``: a protocol-P2 re-personalisation of :data:`FRESH_VARIANTS` instead of the stored P-models)."""
    rows = []
    for r, label in zip(records, labels):
        sc = _scores(r, variant)
        pm, gm = sc["pm"], sc["gm"]
        row = {"method": label, "seed": r["config"]["seed"]}
        for name, c in (("L", 0.0), ("S", c_s), ("G", 1.0)):
            v = np.asarray(pm[str(c)])
            row[name], row[name + "_std"] = float(v.mean()), float(v.std())
        row["GM"] = float(np.mean(gm["1.0"])) if gm else np.nan
        row["GM_std"] = float(np.std(gm["1.0"])) if gm else np.nan
        if r.get("untuned"):  # a run of an arm whose tuning found no value that trained (R.marked reads it)
            row["untuned"] = r["untuned"]
        rows.append(row)
    return pd.DataFrame(rows)


def s_curve_table(records: list[dict[str, Any]], labels: list[str], variant: str | None = None) -> pd.DataFrame:
    """Long table of client-mean S-acc(c) per run and c (Fig. 4)."""
    rows = []
    for r, label in zip(records, labels):
        sc = _scores(r, variant)
        for c in sc["cs"]:
            rows.append({"method": label, "seed": r["config"]["seed"], "c": 100 * c, "s_acc": float(np.mean(sc["pm"][str(c)]))})
    return pd.DataFrame(rows)


def internals_table(
    record: dict[str, Any], keys: tuple[str, ...] = ("loss_rose_frac", "d_norm", "d_min_norm", "sigma", "eta", "n_stale")
) -> pd.DataFrame:
    """Per-round FedPG internals of one run (scalars), plus the mean and max of γ_i."""
    rows = []
    for e in record["rounds"]:
        i = e["internals"]
        row = {"round": e["round"], **{k: i.get(k, np.nan) for k in keys}}
        g = i.get("gamma_auto") or []
        row["gamma_mean"] = float(np.mean(g)) if g else np.nan
        row["gamma_max"] = float(np.max(g)) if g else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------------ Fig. 5
# Mean S-acc of the P-models vs round: Pat-2 (2 classes per client), full participation (spec §5 Fig. 5, §7 item 7).


def s_acc_test_splits(data: FederatedDataset, seed: int, c: float = S_ACC_C) -> FederatedDataset:
    """Evaluation protocol of Fig. 5: client i's test split becomes its S-acc(c) sample (:func:`mixing_sample`, the
    samples of :func:`pm_scores`), so the engine's per-round test accuracy of client i's model is its S-acc(c)."""
    tests = [cl.test for cl in data.clients]
    sizes = [len(t) for t in tests]
    X, Y = torch.cat([t.x for t in tests]), torch.cat([t.y for t in tests])
    clients = []
    for i, cl in enumerate(data.clients):
        idx = torch.as_tensor(mixing_sample(sizes, i, c, seed), device=X.device)
        clients.append(dataclasses.replace(cl, test=Split(X[idx], Y[idx])))
    return dataclasses.replace(data, clients=clients, info={**data.info, "protocol": f"s-acc({c})"})


# Fig. 5's evaluation protocol (part of the runs' keys)
S_ACC = rebuilds_runs_under(EvalProtocol("fedpg-s-acc(0.5)", s_acc_test_splits))


def s_acc_rounds_table(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Long table of client-mean S-acc per run and evaluation round of the Fig. 5 runs (records of the ``fig5``
    experiment, each with its arm's ``label``)."""
    per_run = [len(r["evals"]) for r in records]
    table = curve_table(records).assign(method=np.repeat([r["label"] for r in records], per_run))
    return table.rename(columns={"test_acc": "s_acc"})[["method", "seed", "round", "s_acc"]]


def curve_stats(curves: pd.DataFrame, early: int) -> pd.DataFrame:
    """Per method and seed, from a :func:`s_acc_rounds_table`: the final S-acc; the mean S-acc over the evaluations of
    rounds ≤ ``early`` (speed); and over the whole run the summed drops of the curve between consecutive
    evaluations (0 for a non-decreasing curve) and the largest single drop (oscillation)."""
    rows = []
    for method in dict.fromkeys(curves["method"]):  # methods in order of appearance, seeds ascending
        for seed, g in curves[curves["method"] == method].sort_values("round").groupby("seed"):
            v = g["s_acc"].to_numpy()
            steps = np.diff(v)
            down = -steps[steps < 0]
            rows.append(
                {
                    "method": method,
                    "seed": seed,
                    "final": float(v[-1]),
                    "early_mean": float(g.loc[g["round"] <= early, "s_acc"].mean()),
                    "drops": float(down.sum()),
                    "max_drop": float(down.max()) if down.size else 0.0,
                }
            )
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------ notebook tables

# The paper's FMNIST values (Table 1, Dir(0.1)) and Table 2 (Pat-2): L-acc, S-acc, G-acc, GM acc in %.
PAPER_TABLE1: dict[str, tuple[float | None, ...]] = {
    "Local": (94.7, 30.0, 29.5, None),
    "FedAvg-FT": (97.4, 76.0, 76.1, 87.6),
    "FedProx": (93.9, 76.3, 77.9, 83.8),
    "APFL": (97.5, 75.8, 75.9, 86.6),
    "pFedMe": (93.8, 76.2, 77.3, 81.0),
    "Ditto": (96.4, 65.0, 65.9, 84.2),
    "FedRep": (96.8, 72.0, 72.5, 84.1),
    "FedMGDA+": (96.1, 62.1, 62.8, 83.2),
    "FedPG": (88.9, 87.9, 89.5, 88.5),
    "S-FedPG": (88.7, 88.3, 89.7, 88.5),
    "γ=0.3": (94.9, 85.2, 86.6, 88.5),
    "γ=0.6": (95.2, 84.1, 84.9, 88.5),
    "γ=1.0": (95.3, 83.9, 84.8, 88.5),
}
PAPER_TABLE2: dict[str, tuple[float, ...]] = {
    "FedPG": (89.7, 89.0, 89.0, 89.0),
    "M1 (d = d_r)": (82.0, 78.4, 77.7, 77.8),
    "M2 (no F)": (85.9, 85.0, 84.3, 84.1),
    "M3 (P = G)": (89.5, 88.9, 89.0, 89.0),
    "M4 (no stale)": (86.7, 84.1, 83.6, 84.4),
}
# The paper's CIFAR-10 values (Table 1, Dir(0.1); Table 2, Pat-2): the columns of the CNN analogue's tables.
PAPER_TABLE1_CIFAR10: dict[str, tuple[float | None, ...]] = {
    "Local": (78.8, 17.5, 15.0, None),
    "FedAvg-FT": (88.0, 46.1, 43.1, 57.1),
    "FedProx": (66.6, 55.6, 52.7, 55.6),
    "APFL": (79.3, 60.5, 56.6, 64.3),
    "pFedMe": (68.3, 55.0, 52.6, 56.0),
    "Ditto": (86.0, 25.5, 21.7, 52.6),
    "FedRep": (87.7, 55.3, 51.6, 64.5),
    "FedMGDA+": (85.9, 32.1, 28.2, 56.9),
    "FedPG": (76.7, 74.2, 73.9, 73.9),
    "S-FedPG": (76.3, 76.0, 73.8, 73.7),
    "γ=0.3": (78.4, 76.2, 73.5, 73.9),
    "γ=0.6": (78.8, 76.0, 73.4, 73.9),
    "γ=1.0": (78.9, 75.9, 73.3, 73.9),
}
PAPER_TABLE2_CIFAR10: dict[str, tuple[float, ...]] = {
    "FedPG": (74.9, 74.6, 74.2, 74.1),
    "M1 (d = d_r)": (62.8, 56.5, 56.6, 56.3),
    "M2 (no F)": (63.5, 62.9, 62.9, 62.9),
    "M3 (P = G)": (74.9, 74.5, 74.1, 74.1),
    "M4 (no stale)": (69.8, 63.7, 64.3, 65.1),
}
GAMMA_ORDER = ["γ=0 (M3)", "auto", "γ=0.1", "γ=0.3", "γ=0.6", "γ=1.0"]


def _paper(values: tuple[float | None, ...] | None) -> str:
    return " / ".join("–" if v is None else f"{v:.1f}" for v in (values or (None,) * 4))


def runs_by_label(*results: ExperimentResult) -> dict[str, list[dict[str, Any]]]:
    """label → records of every arm of ``results`` (experiment results), in the experiments' order."""
    return {label: res.labelled(label) for res in results for label in dict.fromkeys(res.table["label"])}


def in_setting(result: ExperimentResult, setting: str) -> ExperimentResult:
    """The runs (and tuning runs) of one ``setting`` of an experiment with settings, as an experiment result."""
    keep = (result.table["setting"] == setting).to_numpy()
    if not keep.any():
        raise KeyError(f"{result.experiment.name}: no runs in setting {setting!r}; it has {sorted(set(result.table['setting']))}")
    tuning = result.tuning
    if tuning is not None and not tuning.empty:
        tuning = tuning[tuning["setting"] == setting].reset_index(drop=True)
    return dataclasses.replace(
        result,
        table=result.table[keep].reset_index(drop=True),
        records=[r for r, k in zip(result.records, keep) if k],
        tuning=tuning,
    )


def table1_table(
    result: ExperimentResult, paper: dict[str, tuple[float | None, ...]] = PAPER_TABLE1
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 1 analogue from the ``table1`` experiment: per-run rows (P1 for every arm, plus '<label> (P2)' rows for
    :data:`FRESH_LABELS`) and the mean ± std over seeds beside the paper's values (``paper``: FMNIST by default)."""
    runs = runs_by_label(result)
    parts = [pm_table(v, [k] * len(v)) for k, v in runs.items()]
    parts += [pm_table(runs[k], [f"{k} (P2)"] * len(runs[k]), variant="auto") for k in FRESH_LABELS if k in runs]
    rows = pd.concat(parts, ignore_index=True)
    summary = mean_std(rows, by=["method"], metrics=["L", "S", "G", "GM"])
    summary["paper L / S / G / GM"] = [_paper(paper.get(m.replace(" (P2)", ""))) for m in summary.method]
    return rows, summary


def scenarios_table(result: ExperimentResult) -> tuple[pd.DataFrame, pd.DataFrame]:
    """App. B.1 analogue: :func:`table1_table` of each setting of ``result`` (the ``table1_scenarios`` experiment),
    stacked; the rows' method reads '<setting>: <label>' (one bar group each), the summary has a ``setting`` column."""
    rows, summaries = [], []
    for setting in dict.fromkeys(result.table["setting"]):
        r, summary = table1_table(in_setting(result, setting))
        rows.append(r.assign(method=setting + ": " + r["method"]))
        summaries.append(summary.drop(columns="paper L / S / G / GM").assign(setting=setting))
    return pd.concat(rows, ignore_index=True), pd.concat(summaries, ignore_index=True)


def gamma_table(
    records: list[dict[str, Any]], order: list[str] = GAMMA_ORDER, paper: dict[str, tuple[float | None, ...]] = PAPER_TABLE1
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The γ trade-off: the FedPG runs re-personalised under protocol P2 for each γ of ``order`` (rows, and the mean ±
    std over seeds with numeric ``<metric>_mean`` columns in %, indexed by γ) beside the paper's γ rows (``paper``)."""
    rows = pd.concat([pm_table(records, [v] * len(records), variant=v) for v in order], ignore_index=True)
    g = rows.groupby("method", sort=False)
    summary = mean_std(rows, by=["method"], metrics=["L", "S", "G", "GM"]).set_index("method").loc[order]
    for m in ("L", "S", "G", "GM"):
        summary[m + "_mean"] = 100 * g[m].mean().loc[order]
    summary["paper L / S / G / GM"] = [_paper(paper.get("FedPG" if v == "auto" else v)) for v in order]
    return rows, summary


def ablation_table(
    table1: ExperimentResult, ablations: ExperimentResult, paper: dict[str, tuple[float, ...]] = PAPER_TABLE2
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 2 analogue: FedPG (of ``table1``; of ``ablations`` where it has a FedPG arm) and the ablation runs under
    protocol P1, and M3 (γ_i = 0) with FedPG's P2 row (M3 is a P2 re-personalisation of the FedPG runs); mean ± std
    over seeds beside the paper's Pat-2 values (``paper``: FMNIST by default)."""
    runs = {"FedPG": table1.labelled("FedPG"), **runs_by_label(ablations)}
    fedpg = runs["FedPG"]
    parts = [pm_table(v, [k] * len(v)) for k, v in runs.items()]
    parts += [
        pm_table(fedpg, ["FedPG (P2)"] * len(fedpg), variant="auto"),
        pm_table(fedpg, ["M3 (P = G) (P2)"] * len(fedpg), variant="γ=0 (M3)"),
    ]
    rows = pd.concat(parts, ignore_index=True)
    summary = mean_std(rows, by=["method"], metrics=["L", "S", "G", "GM"])
    summary["paper (Pat-2) L / S / G / GM"] = [_paper(paper.get(m.replace(" (P2)", ""))) for m in summary.method]
    return rows, summary


FIG4_BASELINES = ("Local", "FedAvg-FT", "Ditto", "FedRep", "FedMGDA+")  # the baselines of the Fig. 4 analogue


def fig4_table(table1: ExperimentResult) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fig. 4 analogue: the long table of mean S-acc(c) per run (P1 for :data:`FIG4_BASELINES` and the FedPG methods;
    FedPG also under P2) and the seed-mean S-acc per method and c (in %) with the L → G drop in points."""
    runs = runs_by_label(table1)
    curves = pd.concat(
        [s_curve_table(runs[k], [k] * len(runs[k])) for k in (*FIG4_BASELINES, *FRESH_LABELS)]
        + [s_curve_table(runs["FedPG"], ["FedPG (P2)"] * len(runs["FedPG"]), variant="auto")],
        ignore_index=True,
    )
    wide = 100 * curves.groupby(["method", "c"], sort=False).s_acc.mean().unstack()
    wide["drop L→G (points)"] = wide[0.0] - wide[100.0]
    return curves, wide.round(1)


def internals_summary(table1: ExperimentResult, ablations: ExperimentResult) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """For FedPG, S-FedPG (of ``table1``) and every ablation: the per-round internals averaged over seeds, and one row
    per label: the fraction of online clients whose loss rose, the mean automatic γ_i, stale columns and σ, and the
    largest logged ĝ_i·d and Eq. 8 residual."""
    runs = {**{k: table1.labelled(k) for k in FRESH_LABELS}, **runs_by_label(ablations)}
    tabs = {k: pd.concat([internals_table(r) for r in v]).groupby("round").mean().reset_index() for k, v in runs.items()}
    rows = {}
    for k, t in tabs.items():
        ints = [e["internals"] for r in runs[k] for e in r["rounds"]]
        dots = [i["max_online_dot"] for i in ints if i.get("max_online_dot") is not None]
        eq8 = [i["max_eq8"] for i in ints if i.get("max_eq8") is not None]
        rows[k] = {
            "loss rose (fraction of online clients)": t.loss_rose_frac.mean(),
            "mean auto γ_i": t.gamma_mean.mean(),
            "mean stale columns": t.n_stale.mean(),
            "mean σ": t.sigma.mean(),
            "max ĝ_i·d": max(dots) if dots else np.nan,
            "max Eq. 8 residual (ĝ_j·d_i/μ²)": max(eq8) if eq8 else np.nan,
        }
    return tabs, pd.DataFrame(rows).T


def fresh_gammas(records: list[dict[str, Any]]) -> np.ndarray:
    """The automatic γ_i of the protocol-P2 round (every client online at the final G-model) of FedPG-method runs."""
    return np.concatenate([r["pm_fresh"]["gamma_auto"] for r in records])


def gamma_values(records: list[dict[str, Any]]) -> np.ndarray:
    """Every automatic γ_i logged during training (all rounds, online clients and runs)."""
    return np.concatenate([np.asarray(e["internals"].get("gamma_auto", []), dtype=float) for r in records for e in r["rounds"]])


def seed_values(records: list[dict[str, Any]], col: str, variant: str | None = None, c_s: float = S_ACC_C) -> dict[int, float]:
    """{seed: client-mean value} of one P-model column (L, S, G, GM, or ``drop``: L − G) of a label's runs, under P1
    (``variant`` None) or a P2 variant."""
    t = pm_table(records, ["x"] * len(records), c_s=c_s, variant=variant)
    vals = t["L"] - t["G"] if col == "drop" else t[col]
    return marked({int(s): float(v) for s, v in zip(t["seed"], vals)}, t)


def internal_means(records: list[dict[str, Any]], key: str) -> dict[int, float]:
    """{seed: mean over rounds} of one logged internal (rounds that log it)."""
    out = {}
    for r in records:
        v = [e["internals"][key] for e in r["rounds"] if e["internals"].get(key) is not None]
        out[int(r["config"]["seed"])] = float(np.mean(v)) if v else math.nan
    return out


def internal_values(runs: Mapping[str, list[dict[str, Any]]], labels: tuple[str, ...], key: str) -> list[float]:
    """Every logged value of one internal over the runs of ``labels`` (those present)."""
    return [
        float(e["internals"][key])
        for k in labels
        for r in runs.get(k, [])
        for e in r["rounds"]
        if e["internals"].get(key) is not None
    ]


def fig5_values(stats: pd.DataFrame, method: str, col: str) -> dict[int, float]:
    """{seed: value} of one Fig. 5 curve statistic (``final``, ``early_mean``, ``drops``, ``max_drop``) of a method."""
    t = stats[stats["method"] == method]
    return {int(s): float(v) for s, v in zip(t["seed"], t[col])}


def fair_gaps(records: list[dict[str, Any]]) -> dict[int, float]:
    """{seed: mean over rounds of 1 + F = 1 − cos(L, 1)}, F the fair objective of the online clients' losses at the
    G-model (0 when they are equal; the paper's own measure of the objective bias, Sec. 3.1)."""
    return {s: 1.0 + v for s, v in internal_means(records, "fair_F").items()}


def fig5_stats_of(result: ExperimentResult) -> pd.DataFrame:
    """The Fig. 5 curve statistics (:func:`curve_stats`) of the runs of a Fig. 5 experiment, early = the first third of
    its rounds (as the notebook computes them for ``fig5``)."""
    rounds = result.records[0]["config"]["rounds"]
    return curve_stats(s_acc_rounds_table(result.records), max(1, rounds // 3))


class Renamed(Mapping[str, Any]):
    """``results`` as a rule reads them with some names standing for others: ``names`` maps a name the rule reads
    (``table1``, ``ablations``, ``fig5_stats``) to the result read instead, an experiment's name, or (name, setting)
    for the runs of one setting of an experiment with settings, or None to hide it."""

    def __init__(self, results: Mapping[str, Any], names: Mapping[str, str | tuple[str, str] | None]) -> None:
        self._results, self._names = results, dict(names)

    def __getitem__(self, name: str) -> Any:
        target = self._names.get(name, name)
        if target is None:
            raise KeyError(name)
        if isinstance(target, tuple):
            return in_setting(self._results[target[0]], target[1])
        return self._results[target]

    def __contains__(self, name: object) -> bool:
        target = self._names.get(name, name) if isinstance(name, str) else None
        return target is not None and (target[0] if isinstance(target, tuple) else target) in self._results

    def __iter__(self) -> Any:
        return iter(k for k in {*self._results, *self._names} if k in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)
