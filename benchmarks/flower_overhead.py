"""The overhead of Flower's simulation engine against pflnb's own engine on the same runs, ratios in one run.

The runs are the same configs both ways (the issue's seven methods at a profile, one seed): first each through pflnb's
engine in this process (``run(cfg, cache=False)``, as ``pflnb run --no-cache``), then all of them through one Flower
simulation (``pflnb.flower.run_flower``: Ray starts once, the runs follow each other on the same nodes), then through
the apps' steps in this process without Flower's runtime (``run_in_process``: the cost of the records alone). Every
Flower record is checked equal to the engine's, bit for bit. Reported: wall seconds of each way, the Flower
simulation split into its start (Ray, the node actors, the first query) and the rounds themselves, the ratios, the
machine and the load average, because other processes on the cores distort every ratio.

    python benchmarks/flower_overhead.py [--profile smoke] [--rounds 2] [--methods fedavg fedbn ...]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import torch

from pflnb import flower as F
from pflnb.experiments.config import profile_config
from pflnb.experiments.run import run

SEVEN = ("fedavg", "fedbn", "ditto", "fedrep", "apfl", "lgmix", "fedco2")


def _cpu() -> str:
    with open("/proc/cpuinfo") as f:
        names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
    return f"{names[0] if names else platform.processor()}, {os.cpu_count()} cores"


def main() -> None:
    """Time the runs both ways and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="smoke")
    ap.add_argument("--dataset", default="digits5-lite")
    ap.add_argument("--rounds", type=int, default=None, help="rounds of every run (default: the profile's)")
    ap.add_argument("--methods", nargs="+", default=list(SEVEN))
    args = ap.parse_args()
    torch.set_num_threads(1)
    extra = {} if args.rounds is None else {"rounds": args.rounds}
    cfgs = [profile_config(args.profile, args.dataset, method=m, **extra) for m in args.methods]
    load0 = os.getloadavg()[0]

    t0 = time.perf_counter()
    engine = [run(cfg, cache=False, progress=False) for cfg in cfgs]
    t_engine = time.perf_counter() - t0

    t0 = time.perf_counter()
    flower = F.run_flower(cfgs)
    t_flower = time.perf_counter() - t0
    t_rounds = sum(r["wall_time_s"] for r in flower)

    t0 = time.perf_counter()
    local = [F.run_in_process(cfg) for cfg in cfgs]
    t_local = time.perf_counter() - t0
    load1 = os.getloadavg()[0]

    for cfg, e, f, lo in zip(cfgs, engine, flower, local):
        assert F.same_numbers(e, f) == [], f"{cfg.method}: Flower's numbers differ"
        assert F.same_numbers(e, lo) == [], f"{cfg.method}: the in-process apps' numbers differ"
    rounds = cfgs[0].rounds
    print(f"machine: {_cpu()}; torch {torch.__version__}; load average {load0:.1f} before, {load1:.1f} after")
    print(f"{len(cfgs)} runs ({', '.join(args.methods)}), {args.profile} profile, {rounds} rounds each; every record equal\n")
    print("| way | wall s | / pflnb engine |")
    print("|---|---|---|")
    print(f"| pflnb engine (`pflnb run`) | {t_engine:.1f} | 1.00 |")
    print(f"| apps' steps in this process, Flower records, no runtime | {t_local:.1f} | {t_local / t_engine:.2f} |")
    print(f"| Flower simulation, whole (`run_flower`) | {t_flower:.1f} | {t_flower / t_engine:.2f} |")
    start = t_flower - t_rounds
    print(f"| of it: start (Ray, node actors, first query) | {start:.1f} | {start / t_engine:.2f} |")
    print(f"| of it: the runs' rounds (server's wall time) | {t_rounds:.1f} | {t_rounds / t_engine:.2f} |")


if __name__ == "__main__":
    main()
