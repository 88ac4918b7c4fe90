"""Cost of LG-Mix's trace approximation against the full empirical-NTK trace as the sample count n grows.

For a BN-free MLP (digits5-lite 8×8 RGB inputs, 192 → 200 → 10) and the reduced BN-CNN's feature extractor, times
  - the feature trace of Eq. (5)/(6): Σ_i ‖h_i‖² from one forward pass (what LG-Mix computes),
  - tr(Ĥ) from the explicit n × n last-layer kernel h hᵀ / m (the naive form Eq. 5 avoids),
  - the full NTK trace Σ_i Σ_k ‖∇_θ f_k(x_i)‖² without a Jacobian (dense layers only, K backward passes),
  - the full NTK trace from the per-sample Jacobian through torch.func (memory n·K·P; skipped above --max-jac),
and prints one row per (model, n) with milliseconds and peak memory. A benchmark, not a test.

    python benchmarks/lgmix_trace_cost.py [--n 32 128 512 2048] [--threads 1] [--max-jac 512]
"""

from __future__ import annotations

import argparse
import time

import torch

from pflnb.models import build_model
from pflnb.theory.ntk import dense_ntk_trace, ntk_trace


def best_time(fn, reps: int = 3) -> float:
    """Best wall time of ``reps`` calls, in milliseconds."""
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return 1e3 * best


def row(model: torch.nn.Module, x: torch.Tensor, dense: bool, jac: bool) -> dict[str, float]:
    """Timings (ms) of the four trace computations on ``x``; NaN where skipped."""

    @torch.no_grad()
    def feat() -> float:
        return float((model.features(x) ** 2).sum())

    @torch.no_grad()
    def naive() -> float:
        h = model.features(x)
        return float(torch.trace(h @ h.T)) / h.shape[1]

    nan = float("nan")
    return {
        "feat": best_time(feat),
        "naive": best_time(naive),
        "dense": best_time(lambda: dense_ntk_trace(model, x), reps=1) if dense else nan,
        "jac": best_time(lambda: ntk_trace(model, x), reps=1) if jac else nan,
    }


def main() -> None:
    """Run the sweep and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[32, 128, 512, 2048])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-jac", type=int, default=512, help="largest n for the full-Jacobian trace")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    header = ("model", "n", "feat Σ‖h‖² ms", "n×n Ĥ ms", "dense NTK ms", "Jacobian NTK ms", "P")
    print("{:14s} {:>6s} {:>14s} {:>10s} {:>13s} {:>16s} {:>8s}".format(*header))
    for name in ("mlp", "small-bn-cnn"):
        model = build_model(name, (3, 8, 8), 10).eval()
        n_params = sum(p.numel() for p in model.parameters())
        ntk_trace(model, torch.rand(2, 3, 8, 8))  # warm up torch.func
        for n in args.n:
            jac = n <= args.max_jac and n * 10 * n_params < 4e8  # the Jacobian holds n·K·P floats
            t = row(model, torch.rand(n, 3, 8, 8), dense=name == "mlp", jac=jac)
            print(
                f"{name:14s} {n:6d} {t['feat']:14.2f} {t['naive']:10.2f} {t['dense']:13.1f} {t['jac']:16.1f} {n_params:8d}",
                flush=True,
            )


if __name__ == "__main__":
    main()
