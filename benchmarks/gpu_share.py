"""Several runs per GPU: the measured footprint of one worker process and how many fit, then the throughput of a
sweep's runs in this process (the default, ``PFLNB_WORKERS=1``) against ``workers="auto"`` (as many worker processes as
the measured memory holds).

For each config: :func:`pflnb.experiments.gpu_share.measure` on one run and on a stack of ``--stack`` runs (cut to
their first round, in a fresh process each), with the workers :func:`~pflnb.experiments.gpu_share.runs_per_device`
gives; then ``--runs`` runs of the config cut to ``--rounds`` rounds (seeds 0, 1, …; batched runner; never cached),
timed through :func:`pflnb.experiments.execute`, first with ``Processes("auto")`` (its workers start CUDA and load
their data, which the timing includes, as a sweep's would), then in this process after its pool ended and the
cached blocks were released. The JSON is written after each step, so a call cut short keeps what it measured.

    python benchmarks/gpu_share.py --device cuda [--configs fedpg/fmnist-paper] [--stack 10] [--runs 8] [--rounds 10]
        [--json results/gpu/gpu_share.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from roofline import CONFIGS  # noqa: E402  (the configs whose data this machine has)

from pflnb.experiments import Processes, RunJob, Serial, execute  # noqa: E402
from pflnb.experiments import gpu_share as G  # noqa: E402
from pflnb.experiments.executors import shutdown_pools  # noqa: E402
from pflnb.experiments.jobs import StackedRuns  # noqa: E402
from pflnb.experiments.ray_backend import machine_cpus  # noqa: E402

MIB = 1 << 20


def footprints(name: str, cfg, stack: int) -> list[dict]:
    rows = []
    for n in (1, stack):
        jobs = tuple(RunJob(cfg.replace(seed=s, runner="stacked")) for s in range(n))
        unit = jobs[0] if n == 1 else StackedRuns(jobs)
        fp = G.measure(unit)
        row = {
            "config": name,
            "runs": n,
            "process_mib": fp.process / MIB,
            "peak_mib": fp.peak / MIB,
            "context_mib": fp.context / MIB,
            "free_mib": fp.free / MIB,
            "workers": G.runs_per_device(fp, machine_cpus()),
        }
        print(
            f"{name:24s} {n:3d} run(s): process {row['process_mib']:8.1f} MiB (allocator peak {row['peak_mib']:.1f}, "
            f"context {row['context_mib']:.1f}) of {row['free_mib']:.0f} MiB free: {row['workers']} workers",
            flush=True,
        )
        rows.append(row)
    return rows


def throughput(name: str, cfg, runs: int, rounds: int, root: Path) -> dict:
    jobs = [RunJob(cfg.replace(seed=s, rounds=rounds, eval_every=rounds, runner="batched")) for s in range(runs)]
    row: dict = {"config": name, "runs": runs, "rounds": rounds}
    t0 = time.perf_counter()
    execute(jobs, Processes("auto"), cache=False, root=root, progress=False)
    row["auto"] = time.perf_counter() - t0
    row["auto workers"] = G.auto_workers(jobs)  # measured above: read, not measured again
    shutdown_pools()
    torch.cuda.empty_cache()
    t0 = time.perf_counter()
    execute(jobs, Serial(), cache=False, root=root, progress=False)
    row["one worker"] = time.perf_counter() - t0
    row["gain"] = row["one worker"] / row["auto"]
    print(
        f"{name:24s} {runs} runs × {rounds} rounds: this process {row['one worker']:.1f} s, "
        f"{row['auto workers']} workers {row['auto']:.1f} s "
        f"({row['gain']:.2f}×)",
        flush=True,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="*", default=["fedpg/fmnist-paper"], help=f"names ({', '.join(CONFIGS)})")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--stack", type=int, default=10)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        parser.error("this benchmark measures CUDA memory: torch.cuda.is_available() is False")
    result = {"device": torch.cuda.get_device_name(), "cpus": os.cpu_count(), "footprints": [], "throughput": []}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.configs:
            cfg = CONFIGS[name]().replace(device=args.device)
            result["footprints"] += footprints(name, cfg, args.stack)
            _write(result, args.json)
            result["throughput"].append(throughput(name, cfg, args.runs, args.rounds, Path(tmp)))
            _write(result, args.json)


def _write(result: dict, path: Path | None) -> None:
    if path is not None:
        path.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
