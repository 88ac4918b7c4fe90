"""What pinning the CPU kernels costs, by operation and batch size: a linear layer, a convolution and a small BN CNN's
training step (forward + backward), each timed with ``torch.utils.benchmark`` in a fresh process per kernel mode (the
libraries read their variables once), one thread, the modes alternated ``--repeats`` times. The modes: ``portable``
(the default pin: MKL's vendor-neutral COMPATIBLE branch), ``avx2`` (the earlier pin: MKL's AVX2 branch, honoured on
Intel CPUs only) and ``native`` (nothing pinned).

Two earlier measurements disagreed: FedAvg on digits5-lite at batch 10 ran at 0.69× PFLlib's client-steps/s pinned and
1.12× native (a quiet 2-core AVX-512 CPU), while ``benchmarks/kernels.py`` found the pinned runs 0.86× the native
time. This splits the question by the kind of kernel and the batch size.

    python benchmarks/kernel_pin_cost.py [--repeats 3] [--out benchmarks/results/kernel_pin_cost_cpu.md]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODES = ("portable", "avx2", "native")  # pflnb.kernels.MODES; the first is the default pin
CASES = (
    [("linear 784→200", "linear", b) for b in (10, 50, 256)]
    + [("conv 3→32 k5, 28 px", "conv", b) for b in (10, 32, 128)]
    + [("conv 3→32 k5, 28 px, channels-last", "conv-cl", b) for b in (10, 32, 128)]
    + [("small-bn-cnn step, 28 px", "cnn", b) for b in (10, 32)]
)


def child() -> None:
    """In a fresh process under ``$PFLNB_KERNELS``: the median seconds of each case (JSON on stdout)."""
    sys.path.insert(0, str(ROOT))
    import torch
    from torch.utils import benchmark

    import pflnb  # noqa: F401  (pins the kernels before torch runs)
    from pflnb import kernels
    from pflnb.models import build_model

    torch.set_num_threads(1)
    out = {"kernels": kernels.describe(), "cases": {}}
    for name, kind, batch in CASES:
        torch.manual_seed(0)
        if kind == "linear":
            layer, x = torch.nn.Linear(784, 200), torch.randn(batch, 784)
        elif kind == "conv":
            layer, x = torch.nn.Conv2d(3, 32, 5), torch.randn(batch, 3, 28, 28)
        elif kind == "conv-cl":  # the same convolution in the NHWC layout oneDNN prefers
            layer = torch.nn.Conv2d(3, 32, 5).to(memory_format=torch.channels_last)
            x = torch.randn(batch, 3, 28, 28).contiguous(memory_format=torch.channels_last)
        else:
            layer, x = build_model("small-bn-cnn", (3, 28, 28), 10), torch.randn(batch, 3, 28, 28)

        def step(layer=layer, x=x):
            layer.zero_grad(set_to_none=True)
            layer(x).square().mean().backward()

        timer = benchmark.Timer(stmt="step()", globals={"step": step}, num_threads=1)
        out["cases"][f"{name} | {batch}"] = timer.blocked_autorange(min_run_time=0.5).median
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    times: dict[str, dict[str, list[float]]] = {m: {} for m in MODES}
    described = {}
    for _ in range(args.repeats):
        for mode in MODES:
            env = {**os.environ, "PFLNB_KERNELS": mode}
            for v in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA"):
                env.pop(v, None)
            res = json.loads(
                subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True, text=True, check=True).stdout
            )
            described[mode] = res["kernels"]
            for case, t in res["cases"].items():
                times[mode].setdefault(case, []).append(t)
    k, pinned = described["portable"], [m for m in MODES if m != "native"]
    lines = [
        "# Pinned vs native CPU kernels, by operation and batch size",
        "",
        f"CPU: {k['cpu']} ({k.get('vendor', '')}); torch capability pinned {k['capability']}, native "
        f"{described['native']['capability']}; MKL branch: "
        + "; ".join(f"{m} {described[m].get('mkl_branch', '')}" for m in pinned)
        + f". One thread, forward + backward, median of `torch.utils.benchmark` blocks, best of {args.repeats} "
        "alternated processes.",
        "",
        "| operation | batch | " + " | ".join([*(f"{m} (ms)" for m in MODES), *(f"{m} / native" for m in pinned)]) + " |",
        "|---|---|" + "---|" * (len(MODES) + len(pinned)),
    ]
    best = {m: {c: min(ts) for c, ts in times[m].items()} for m in MODES}
    for case in best["native"]:
        name, batch = case.split(" | ")
        ms = " | ".join(f"{1e3 * best[m][case]:.3f}" for m in MODES)
        ratios = " | ".join(f"{best[m][case] / best['native'][case]:.2f}×" for m in pinned)
        lines.append(f"| {name} | {batch} | {ms} | {ratios} |")
    lines.append("")
    for m in pinned:
        spread = statistics.median(best[m][c] / best["native"][c] for c in best["native"])
        lines.append(f"Median ratio {m} / native over the cases: {spread:.2f}×.")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    if "--child" in sys.argv:
        child()
    else:
        main()
