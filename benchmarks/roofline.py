"""How much of the device the engine uses: FLOPs per run, FLOP/s achieved and the fraction of the device's float32 peak,
for the sequential runner, the client-batched runner and stacked runs (a sweep's runs trained as one program).

For each config: torch's FLOP counter (``torch.utils.flop_counter.FlopCounterMode``) counts a run of 1 round and a
run of 2 rounds evaluated once (sequential runner), which gives the FLOPs of a round's training and server step and of
one evaluation; a run's FLOPs are rounds × the first + evaluations × the second. Then each path trains ``--rounds``
rounds (evaluated once, at the end) and is timed by the wall clock:

- ``sequential``: one run, clients one after another;
- ``batched``: one run, the round's clients as one batched program (torch.func);
- ``stacked``: ``--stack`` runs of the config (seeds 0, 1, …, and learning rates cycling through ×1, ×0.5, ×2 of the
  config's: a tuning grid with its verdict seeds) in lock-step, every round's local work of all of them in one batched
  call (:func:`pflnb.fl.run_stacked`); its time per run is the wall time over the runs.

A full run's time is extrapolated from the measured rounds: rounds × (time of a round) + evaluations × (time of an
evaluation), per run (amortized over the stack). The peak: on a CPU, threads × the highest clock (lscpu) × 32 float32
FLOP per cycle (two AVX2 FMA units of 8 lanes: the kernels are pinned to AVX2, ``pflnb.kernels``); on a GPU, the
nominal float32 (non-tensor-core) peak of the device in :data:`GPU_PEAKS`. Beside it, the FLOP/s of a large float32
matrix product measured here (``gemm``), a practical ceiling.

    python benchmarks/roofline.py [--configs fedpg/fmnist-paper ...] [--device cpu] [--rounds 2] [--stack 15]
        [--json benchmarks/results/roofline_cpu.json] [--out benchmarks/results/roofline_cpu.md]

On a GPU, ``--configs paper`` adds every paper-profile config of ``tests/test_gpu_paper.py`` (its data written in the
real formats under ``--root``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

import pflnb
from pflnb.algorithms import make_algorithm
from pflnb.data import build_federated
from pflnb.experiments import ExperimentConfig
from pflnb.fl import BatchedRunner, SequentialRunner, run_simulation, run_stacked, simulate
from pflnb.models import build_model

REPO = Path(__file__).resolve().parents[1]
# Nominal float32 peaks without tensor cores (vendor data sheets, FLOP/s).
GPU_PEAKS = {"H200": 67e12, "H100": 67e12, "A100": 19.5e12, "L40S": 91.6e12, "A10": 31.2e12, "T4": 8.1e12}
LR_FACTORS = (1.0, 0.5, 2.0)


def _fedpg(profile: str, dataset: str, method: str = "fedpg") -> ExperimentConfig:
    from pflnb.papers.fedpg.paper import PAPER

    return PAPER.experiment("table1").base(profile, dataset, method=method)


def _baseline(profile: str, setting: str) -> ExperimentConfig:
    from pflnb.experiments import baselines as EB

    return EB.baseline_config(profile, setting)


# Configs whose data this machine has (digits5-lite is embedded; Fashion-MNIST from the Debian package).
CONFIGS: dict[str, Callable[[], ExperimentConfig]] = {
    "fedpg/fmnist-paper": lambda: _fedpg("paper", "fmnist"),
    "fedavg/fmnist-paper": lambda: _fedpg("paper", "fmnist", "fedavg"),
    "fedpg/fmnist-cpu": lambda: _fedpg("cpu", "fmnist"),
    "fedavg/feature-shift-cpu": lambda: _baseline("cpu", "feature-shift"),
}


def _paper_configs(root: Path, device: str) -> dict[str, Callable[[], ExperimentConfig]]:
    spec = importlib.util.spec_from_file_location("test_gpu_paper", REPO / "tests" / "test_gpu_paper.py")
    tp = importlib.util.module_from_spec(spec)
    sys.modules["test_gpu_paper"] = tp
    spec.loader.exec_module(tp)
    if not (root / "FashionMNIST").exists():
        tp.write_paper_data(root)
    cfgs = tp.paper_first_round_configs(root, device=device)
    return {f"{k} (paper)": (lambda c=c: c) for k, c in cfgs.items()}


def cpu_peak(threads: int) -> tuple[float, str]:
    """Nominal float32 peak of ``threads`` cores: the highest clock × 32 FLOP/cycle (AVX2 FMA, two units)."""
    ghz = math.nan
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("CPU max MHz:"):
                ghz = float(line.split(":")[1]) / 1000
        if math.isnan(ghz):
            for line in out.splitlines():
                if line.startswith("Model name:") and "@" in line:
                    ghz = float(line.split("@")[1].strip().rstrip("GHz").strip())
    except (OSError, subprocess.CalledProcessError, ValueError):
        pass
    if math.isnan(ghz):
        with open("/proc/cpuinfo") as f:
            mhz = [float(line.split(":")[1]) for line in f if line.startswith("cpu MHz")]
        ghz = max(mhz) / 1000 if mhz else math.nan
    return threads * ghz * 1e9 * 32, f"{threads} thread(s) × {ghz:.2f} GHz × 32 FLOP/cycle (AVX2 FMA)"


def device_peak(device: torch.device, threads: int) -> tuple[float, str]:
    """The device's nominal float32 peak (FLOP/s) and how it was found."""
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        for key, peak in GPU_PEAKS.items():
            if key in name:
                return peak, f"{name}: nominal float32 (no tensor cores) {peak / 1e12:.1f} TFLOP/s"
        return math.nan, f"{name}: no nominal peak known"
    return cpu_peak(threads)


def gemm_flops(device: torch.device, n: int = 2048, repeats: int = 5) -> float:
    """FLOP/s of an n × n float32 matrix product on ``device`` (TF32 off), the best of ``repeats``."""
    torch.backends.cuda.matmul.allow_tf32 = False
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    best = math.inf
    for _ in range(repeats + 1):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        a @ b
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best


def _setup(cfg: ExperimentConfig):
    data = build_federated(cfg.data_spec(), seed=cfg.seed)

    def model_fn():
        return build_model(cfg.model, data.input_shape, data.num_classes)

    return make_algorithm(cfg.method, cfg.method_params), data, model_fn


def count_flops(cfg: ExperimentConfig) -> tuple[float, float]:
    """(FLOPs of one round's training and server step, FLOPs of one evaluation of every client)."""
    totals = []
    for rounds in (1, 2):
        c = cfg.replace(rounds=rounds, eval_every=2)
        algorithm, data, model_fn = _setup(c)
        with FlopCounterMode(display=False) as counter:
            run_simulation(algorithm, data, model_fn, c.settings(progress=False), runner=SequentialRunner())
        totals.append(counter.get_total_flops())
    one, two = totals  # one = train + eval, two = 2 train + eval
    return float(two - one), float(2 * one - two)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_path(cfg: ExperimentConfig, path: str, rounds: int, stack: int) -> dict:
    """Seconds per round and per evaluation, per run (amortized over the stack), of ``path``."""
    base = cfg.replace(rounds=rounds, eval_every=rounds)
    n = stack if path == "stacked" else 1
    cfgs = [base.replace(seed=s, lr=base.lr * LR_FACTORS[s % len(LR_FACTORS)]) for s in range(n)]
    setups = [(c, *_setup(c)) for c in cfgs]
    device = pflnb.device(cfg.device)
    _sync(device)
    t0 = time.perf_counter()
    if path == "stacked":
        sims = [simulate(a, d, fn, c.settings(progress=False), runner=BatchedRunner()) for c, a, d, fn in setups]
        records = run_stacked(sims)
    else:
        runner = SequentialRunner() if path == "sequential" else BatchedRunner()
        records = [run_simulation(a, d, fn, c.settings(progress=False), runner=runner) for c, a, d, fn in setups]
    _sync(device)
    wall = time.perf_counter() - t0
    evals = sum(r["rounds"][-1]["time"]["eval"] for r in records)
    return {
        "runs": n,
        "wall_s": wall,
        "round_s": (wall - evals) / (rounds * n),  # per run: the stacked call's time shared out
        "eval_s": evals / n,
        "max_memory_gib": torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None,
    }


def measure(name: str, cfg: ExperimentConfig, rounds: int, stack: int, peak: float, paths: list[str]) -> dict:
    train_flops, eval_flops = count_flops(cfg)
    n_evals = math.ceil(cfg.rounds / cfg.eval_every)
    run_flops = cfg.rounds * train_flops + n_evals * eval_flops
    row = {
        "name": name,
        "method": cfg.method,
        "dataset": cfg.dataset,
        "model": cfg.model,
        "clients": cfg.num_clients,
        "participation": cfg.participation,
        "rounds": cfg.rounds,
        "round_gflop": train_flops / 1e9,
        "eval_gflop": eval_flops / 1e9,
        "run_tflop": run_flops / 1e12,
        "physical_limit_s": run_flops / peak if peak == peak else None,
        "paths": {},
    }
    for path in paths:
        t = time_path(cfg, path, rounds, stack)
        run_s = cfg.rounds * t["round_s"] + n_evals * t["eval_s"]
        row["paths"][path] = {
            **t,
            "run_s": run_s,
            "gflops": run_flops / run_s / 1e9,
            "fraction_of_peak": run_flops / run_s / peak if peak == peak else None,
        }
        print(
            f"{name:28s} {path:10s} {t['runs']:3d} run(s): {t['round_s']:.4f} s/round, run ≈ {run_s:8.1f} s, "
            f"{run_flops / run_s / 1e9:8.2f} GFLOP/s ({100 * run_flops / run_s / peak:.2f} % of peak)",
            flush=True,
        )
    return row


def _kernels_line(kernels: dict | None) -> list[str]:
    """The CPU kernels the timings ran on (:func:`pflnb.kernels.describe`), as a line of the report."""
    if not kernels:
        return []
    return [
        "",
        f"CPU kernels: mode `{kernels['mode']}` ({'honoured' if kernels['honoured'] else 'NOT honoured'}), "
        f"{kernels['cpu']}, torch capability {kernels['capability']}, MKL branch {kernels['mkl_branch']}.",
    ]


def markdown(result: dict) -> str:
    lines = [
        f"# Roofline: {result['device']}",
        "",
        f"`python benchmarks/roofline.py {' '.join(result['argv'])}` — torch {result['torch']}, {result['threads']} thread(s);"
        f" peak {result['peak_tflops']:.3f} TFLOP/s ({result['peak_how']}); measured {result['gemm_n']}² float32 GEMM "
        f"{result['gemm_tflops']:.3f} TFLOP/s. Rounds timed per path: {result['rounds']}; stack: {result['stack']} runs "
        "(seeds × rates ×1, ×0.5, ×2). A run's time is extrapolated to its full rounds; per run, amortized over the stack.",
        *_kernels_line(result.get("kernels")),
        "",
        "| config | clients (online) | GFLOP/round | TFLOP/run | limit at peak | path | s/round per run | run | GFLOP/s "
        "| % of peak |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        online = max(1, math.floor(row["participation"] * row["clients"] + 0.5))
        for path, p in row["paths"].items():
            limit = f"{row['physical_limit_s']:.1f} s" if row["physical_limit_s"] is not None else "–"
            lines.append(
                f"| {row['name']} | {row['clients']} ({online}) | {row['round_gflop']:.2f} | {row['run_tflop']:.2f} | {limit} "
                f"| {path} | {p['round_s']:.4f} | {p['run_s'] / 60:.1f} min | {p['gflops']:.1f} "
                f"| {100 * p['fraction_of_peak']:.2f} |"
            )
    for row in result["rows"]:
        seq = row["paths"].get("sequential")
        if seq:
            gains = ", ".join(f"{k} {seq['run_s'] / v['run_s']:.2f}×" for k, v in row["paths"].items() if k != "sequential")
            lines.append(f"\n{row['name']}: time per run relative to sequential: {gains}.")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="*", default=list(CONFIGS), help=f"names ({', '.join(CONFIGS)}) or 'paper'")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2, help="rounds timed per path")
    parser.add_argument("--stack", type=int, default=15, help="runs in the stacked path")
    parser.add_argument("--paths", nargs="*", default=["sequential", "batched", "stacked"])
    parser.add_argument("--root", default=str(REPO / "results" / "_paper_data"), help="paper data (written when missing)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    pflnb.set_threads(args.threads)
    device = pflnb.device(args.device)
    configs = {k: v for k, v in CONFIGS.items() if k in args.configs}
    if "paper" in args.configs:
        configs.update(_paper_configs(Path(args.root), args.device))
    unknown = [c for c in args.configs if c not in CONFIGS and c != "paper"]
    if unknown:
        parser.error(f"unknown configs {unknown}; known: {sorted(CONFIGS)} or 'paper'")
    nominal, how = device_peak(device, args.threads)
    gemm_n = 4096 if device.type == "cuda" else 1024
    gemm = gemm_flops(device, gemm_n)
    peak = nominal if not gemm > nominal else gemm  # a nominal clock below what a GEMM reaches (base vs boost) is no peak
    if peak is gemm:
        how += f"; below the measured GEMM, so the peak is the GEMM's {gemm / 1e12:.3f} TFLOP/s"
    result = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({platform.processor() or 'x86_64'})",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "argv": sys.argv[1:],
        "kernels": pflnb.kernels.describe() if device.type == "cpu" else None,
        "peak_tflops": peak / 1e12,
        "peak_how": how,
        "gemm_n": gemm_n,
        "gemm_tflops": gemm / 1e12,
        "rounds": args.rounds,
        "stack": args.stack,
        "rows": [],
    }
    for name, make in configs.items():
        cfg = make().replace(device=args.device)
        result["rows"].append(measure(name, cfg, args.rounds, args.stack, peak, args.paths))
        if args.json:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).write_text(json.dumps(result, indent=1))
    text = markdown(result)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
