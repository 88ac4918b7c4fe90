"""Time per round of every paper's ``paper`` profile on this machine, and the hours each notebook would take.

Writes every dataset of the paper profiles in its real on-disk format (tests/test_gpu_paper.py's writer: CIFAR,
MNIST and Fashion-MNIST at their real sizes, Digits5 at FedBN's partition size, Office-Caltech10 and DomainNet-10
with fewer photos than the real ones), then runs the first round of each paper-profile config (the same list as the
``gpu`` test of the first rounds) and reports the time of that round: local training + aggregation + evaluation.

On the CPU the time is the process's CPU time on one thread, which does not grow when other processes share the
cores; on a GPU (``--device cuda``) it is the wall time.
Where a round on this CPU would take too long, a fraction f of the round is run and the time divided by f:
Office-Caltech10 and DomainNet-10 (f = images written / images of the real benchmark, ``REAL_IMAGES``) and the
MobileNet configs (``max_samples`` = f × 60,000). Hours per notebook: every run the notebook makes at the paper
profile (its config lists, rebuilt here from the same functions) × its rounds × the time per round of the measured
config with the same dataset and model, scaled by participation × local epochs × samples (local training) and by
samples / evaluation interval (evaluation). Methods are not told apart (Fed-CO2 trains two models, a baseline
one), so these are estimates of the order of magnitude.

    python benchmarks/paper_round_time.py [--root DIR] [--device cpu] [--threads 1] [--only fedco2/Digits ...]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import torch

import pflnb
from pflnb.algorithms import make_algorithm
from pflnb.data import build_federated
from pflnb.experiments import ExperimentConfig
from pflnb.fl import run_simulation
from pflnb.models import build_model

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("test_gpu_paper", REPO / "tests" / "test_gpu_paper.py")
TP = importlib.util.module_from_spec(_spec)
sys.modules["test_gpu_paper"] = TP
_spec.loader.exec_module(TP)

# Images of the real datasets (train + test pooled as pflnb builds them). Office-Caltech10: the four sites' 2,533
# photos; DomainNet-10: FedBN's ten-class subset, about 3,000 photos per domain (assumed: not measured here).
# Digits5: FedBN's percent 0.1 = 743 training images per domain and the 20 % test split (≈ 1,858).
REAL_IMAGES = {
    "cifar10": 60000,
    "cifar100": 60000,
    "mnist": 70000,
    "fmnist": 70000,
    "digits5": 5 * (743 + 1858),
    "office-caltech10": 2533,
    "domainnet10": 6 * 3000,
}
MOBILENET_FRACTION = 0.2


def images_written(cfg: ExperimentConfig) -> int:
    """Images of ``cfg``'s dataset in the written folder (pooled over domains and splits)."""
    from pflnb.data.build import load_source

    return len(load_source(cfg.dataset, cfg.image_size, cfg.data_root, cfg.seed).y)


def measure(name: str, cfg: ExperimentConfig) -> dict:
    """CPU time of round 1 of ``cfg`` (a fraction of it where noted), extrapolated to a full round.

    The process's CPU time (``time.process_time``, one thread) over the simulation is split into local training,
    aggregation and evaluation in the proportions of the engine's wall-clock timings of round 1; CPU time, unlike
    wall time, does not grow when other processes share the cores."""
    f = 1.0
    if cfg.dataset in ("office-caltech10", "domainnet10"):
        f = images_written(cfg) / REAL_IMAGES[cfg.dataset]
    elif cfg.model == "mobilenet-v1":
        f = MOBILENET_FRACTION
        cfg = cfg.replace(max_samples=int(f * REAL_IMAGES[cfg.dataset]))
    data = build_federated(cfg.data_spec(), seed=cfg.seed)
    algorithm = make_algorithm(cfg.method, cfg.method_params)

    def model_fn():
        return build_model(cfg.model, data.input_shape, data.num_classes)

    c0, w0 = time.process_time(), time.perf_counter()
    with pflnb.determinism(cfg.deterministic):
        rec = run_simulation(algorithm, data, model_fn, cfg.settings(progress=False))
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    t = rec["rounds"][0]["time"]
    # CPU seconds per wall second of this run (< 1 when the cores are shared); on a GPU the wall time is the cost
    share = cpu / wall if pflnb.device(cfg.device).type == "cpu" else 1.0
    local, agg, ev = (share * t[k] for k in ("local", "aggregate", "eval"))
    return {
        "name": name,
        "dataset": cfg.dataset,
        "model": cfg.model,
        "method": cfg.method,
        "clients": cfg.num_clients,
        "participation": cfg.participation,
        "local_epochs": cfg.local_epochs,
        "batch_size": cfg.batch_size,
        "optimizer": cfg.optimizer,
        "train_images": sum(len(c.train) for c in data.clients),
        "fraction": f,
        "measured_cpu_s": local + agg + ev,
        "wall_s": wall,
        "cpu_per_wall": share,
        "local_s": local / f,
        "aggregate_s": agg,
        "eval_s": ev / f,
        "round_s": local / f + agg + ev / f,
    }


# ---- the runs of each notebook at the paper profile (mirrors the notebooks' run_many calls) ------------------


def _dedupe(cfgs: Iterable[ExperimentConfig]) -> list[ExperimentConfig]:
    seen, out = set(), []
    for c in cfgs:
        if (c.method, c.key()) not in seen:
            seen.add((c.method, c.key()))
            out.append(c)
    return out


def notebook_runs(root: str) -> dict[str, list[ExperimentConfig]]:
    """Every run config of each paper notebook at the paper profile (theory cells and numpy simulations excluded)."""
    import nbformat

    from pflnb.experiments import baselines as EB
    from pflnb.experiments import fedco2 as E2
    from pflnb.experiments import fedfac as E5
    from pflnb.experiments import fedpg as E3
    from pflnb.experiments import lgmix as E1
    from pflnb.experiments import pmixfed as E4

    out: dict[str, list[ExperimentConfig]] = {}
    base, seeds = E1.lgmix_config("paper"), E1.seeds_of("paper")
    runs = [c for _, c in E1.configs(base, list(E1.METHODS), seeds)]
    runs += [c for _, c in E1.configs(base, list(E1.ABLATIONS), seeds)]
    runs += [
        E1.scalability_config(c, k)
        for k in (1, 2, 3)
        for _, c in E1.configs(base, ["FedAvg", "FedBN", "FedAlt", "LG-Mix"], seeds[:1])
    ]
    runs += [c.replace(batch_size=b) for b in (8, 16, 32, 64) for _, c in E1.configs(base, ["LG-Mix"], seeds[:1])]
    out["01_lgmix"] = runs

    S = E2.settings("paper")
    fbase = E2.feature_skew_config("paper", root)
    runs = E2.method_configs(fbase, list(E2.BASELINES) + ["fedco2"], E2.seeds_for("paper", "feature"), weights="uniform")
    runs += E2.ablation_configs(fbase, {**E2.ABLATIONS, **E2.FINE_ABLATIONS}, E2.seeds_for("paper", "ablation"))
    runs += E2.personalize_configs(fbase, E2.seeds_for("paper", "personalize"))
    lseeds = E2.seeds_for("paper", "label")
    for part in ("pathological", "dirichlet"):
        runs += E2.method_configs(
            E2.label_skew_config("paper", part, 0.3, root), list(S["label_methods"]) + ["fedco2-label"], lseeds
        )
    lf = E2.label_feature_config("paper", 0.3, root)
    runs += E2.method_configs(lf, list(S["label_feature_methods"]) + ["fedco2"], lseeds, weights="uniform")
    for n in S["clients"]:
        runs += E2.method_configs(
            E2.label_skew_config("paper", "dirichlet", 0.3, root).replace(num_clients=n), ["fedavg", "fedco2-label"], lseeds[:1]
        )
    out["02_fedco2"] = runs

    base, seeds = E3.fedpg_config("paper", "fmnist", data_root=root), [0, 1, 2, 3, 4]
    methods = ["local", "fedavg-ft", "ditto", "fedrep", "fedmgda+", "fedpg", "s-fedpg", "apfl", "fedprox", "pfedme"]
    runs = [base.replace(method=m, seed=s) for m in methods for s in seeds]
    runs += [
        base.replace(method="fedpg", method_params=p, seed=s)
        for p in ({"direction": "fedsgd"}, {"fair": False}, {"stale": False})
        for s in seeds
    ]
    runs += [
        c
        for cs in E3.fig5_configs(E3.fig5_config("paper", "fmnist", data_root=root), seeds, E3.FEDPG_LR["paper"]).values()
        for c in cs
    ]
    out["03_fedpg"] = runs

    seeds = E4.pmixfed_seeds("paper")
    runs = E4.main_configs("paper", seeds) + E4.mismatched_configs("paper", seeds)
    runs += [c for _, c in E4.mu_variant_configs("paper", seeds)] + E4.shock_configs("paper", seeds)
    runs += [c for _, c in E4.hetero_depth_configs("paper", E4.hetero_seeds("paper", seeds))]
    out["04_pmixfed"] = runs
    out["04_pmixfed (run_mobilenet=True adds)"] = E4.main_configs("paper", seeds, model="mobilenet-v1")

    nb = nbformat.read(REPO / "notebooks" / "05_fedfac.ipynb", 4)
    cell = next(c.source for c in nb.cells if c.cell_type == "code" and "SIZES = {" in c.source)
    block = cell[cell.index("SIZES = {") : cell.index("Z = SIZES[profile]")]
    scope: dict = {"X": E5}
    exec(block, scope)  # the notebook's per-profile sizes (dict literals)
    Z = scope["SIZES"]["paper"]
    bases = E5.setting_configs("paper", root)
    fac = dict(layers=(2,), q=0.5, kappa=0.85)

    def cfg(setting, label, seed, **params):
        extra = fac if E5.METHODS[label][0] == "fedfac" else {}
        return E5.config_for(bases[setting], label, seed, **{**extra, **params})

    t2_settings = list(bases) if Z.get("t2_settings") is None else Z["t2_settings"]
    t2_methods = (lambda s: list(E5.METHODS)) if Z.get("t2_methods") is None else (lambda s: Z["t2_methods"][s])
    runs = [cfg(s, lab, seed) for s in t2_settings for lab in t2_methods(s) for seed in Z["t2_seeds"]]
    d5 = E5.digits5_base("paper", root)
    runs += [
        E5.config_for(d5, lab, seed, **(fac if E5.METHODS[lab][0] == "fedfac" else {}))
        for lab in Z["d5_methods"]
        for seed in Z["d5_seeds"]
    ]
    ts, s0 = Z["tune_setting"], Z["t2_seeds"][0]
    runs += [cfg(ts, "FedFac dynamic", s0, layers=(layer,)) for layer in Z["tune_layers"]]
    runs += [cfg(ts, "FedFac dynamic", s0, q=q) for q in sorted(set(Z["tune_q"]) | {0.5})]
    runs += [cfg(ts, "FedFac dynamic", s0, kappa=k) for k in sorted(set(Z["tune_kappa"]) | {0.85})]
    variants = ({}, {"mask": "shared"}, {"mask": "personal"}, {"partition": "random_fixed"}, {"partition": "random_redrawn"})
    runs += [cfg(s, "FedFac dynamic", seed, q=0.5, **kw) for s in Z["abl_settings"] for kw in variants for seed in Z["abl_seeds"]]
    out["05_fedfac"] = runs

    out["06_baselines"] = [c for s in EB.SETTINGS for c in EB.baseline_configs("paper", s, data_root=root)]
    return {k: _dedupe(v) for k, v in out.items()}


def _samples(cfg: ExperimentConfig) -> float:
    return float(cfg.max_samples or REAL_IMAGES.get(cfg.dataset, 60000))


def estimate_seconds(cfg: ExperimentConfig, measured: list[dict]) -> tuple[float, str]:
    """Seconds for all rounds of ``cfg`` from the measured config with its dataset and model (else its dataset)."""
    ref = next((m for m in measured if (m["dataset"], m["model"]) == (cfg.dataset, cfg.model)), None)
    how = "dataset+model"
    if ref is None:
        ref, how = next((m for m in measured if m["dataset"] == cfg.dataset), None), "dataset only"
    if ref is None:
        return math.nan, "unmatched"
    ref_samples = REAL_IMAGES.get(ref["dataset"], 60000)
    work = (cfg.participation * cfg.local_epochs * _samples(cfg)) / (ref["participation"] * ref["local_epochs"] * ref_samples)
    local = ref["local_s"] * work + ref["aggregate_s"]
    evals = math.ceil(cfg.rounds / cfg.eval_every)
    eval_s = ref["eval_s"] * _samples(cfg) / ref_samples
    return cfg.rounds * local + evals * eval_s, how


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=str(REPO / "results" / "_paper_data"), help="data folder (written when missing)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", nargs="*", default=None, help="config names (default: all)")
    parser.add_argument("--out", default=str(REPO / "results" / "paper_round_time.json"))
    args = parser.parse_args()
    pflnb.set_threads(args.threads)
    root = Path(args.root)
    if not (root / "FashionMNIST").exists():
        t0 = time.perf_counter()
        TP.write_paper_data(root)
        print(f"data written to {root} in {time.perf_counter() - t0:.0f} s", flush=True)
    os.environ["PFLNB_DATA"] = str(root)
    cfgs = TP.paper_first_round_configs(root, device=args.device)
    from pflnb.experiments.config import ExperimentConfig as _EC  # noqa: F401  (configs are plain dataclasses)

    prior = json.loads(Path(args.out).read_text()) if Path(args.out).exists() else {"rounds": []}
    done = {r["name"]: r for r in prior["rounds"]}
    for name, cfg in cfgs.items():
        if args.only is not None and name not in args.only:
            continue
        row = measure(name, cfg)
        done[name] = row
        note = f"measured {row['measured_cpu_s']:.1f} s CPU, f = {row['fraction']:.3f}, CPU/wall {row['cpu_per_wall']:.2f}"
        print(f"{name:36s} {row['round_s']:9.1f} s/round ({note})", flush=True)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"threads": torch.get_num_threads(), "rounds": list(done.values())}, indent=1))
    measured = list(done.values())
    books = {}
    for nb, runs in notebook_runs(str(root)).items():
        secs, how = zip(*(estimate_seconds(c, measured) for c in runs)) if runs else ((), ())
        books[nb] = {
            "runs": len(runs),
            "run_rounds": sum(c.rounds for c in runs),
            "hours": sum(s for s in secs if not math.isnan(s)) / 3600,
            "approximate_matches": sum(h != "dataset+model" for h in how),
        }
        print(f"{nb:40s} {len(runs):4d} runs, {books[nb]['run_rounds']:7d} run-rounds, ≈ {books[nb]['hours']:9.1f} h", flush=True)
    Path(args.out).write_text(json.dumps({"threads": torch.get_num_threads(), "rounds": measured, "notebooks": books}, indent=1))


if __name__ == "__main__":
    main()
