"""Engine throughput baseline: client-steps per second and peak memory of FedAvg.

Runs FedAvg on digits5-lite and Fashion-MNIST with 10 and 100 clients for a few rounds and prints one row
per setting: SGD steps taken by clients per second of local training, rounds per second, and peak memory
(process RSS on CPU, allocated memory on CUDA). A baseline for later engine work (batched runners), not a test.

    python benchmarks/engine_throughput.py [--rounds 3] [--threads 1 2] [--device auto]
"""

from __future__ import annotations

import argparse
import resource
import time

import torch

import pflnb
from pflnb.algorithms import make_algorithm
from pflnb.data import DataUnavailable, build_federated
from pflnb.experiments import profile_config
from pflnb.fl import run_simulation
from pflnb.models import build_model

SETTINGS = [
    ("digits5-lite", 10, dict(image_size=16)),
    ("digits5-lite", 100, dict(image_size=16, min_samples=5)),
    ("fmnist", 10, dict(max_samples=10000)),
    ("fmnist", 100, dict(max_samples=10000)),
]


def peak_rss_mb() -> float:
    """Peak resident memory of this process in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench(dataset: str, n_clients: int, extra: dict, rounds: int, device: torch.device) -> dict:
    """Time ``rounds`` FedAvg rounds (full participation, no evaluation until the last round)."""
    cfg = profile_config("cpu", dataset, num_clients=n_clients, rounds=rounds, eval_every=rounds, **extra)
    data = build_federated(cfg.data_spec(), seed=0)
    settings = cfg.settings(progress=False)
    settings.device = str(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    rec = run_simulation(
        make_algorithm("fedavg"), data, lambda: build_model(cfg.model, data.input_shape, data.num_classes), settings
    )
    wall = time.perf_counter() - t0
    steps = sum(m["steps"] for r in rec["rounds"] for m in r["client_metrics"].values())
    local = sum(r["time"]["local"] for r in rec["rounds"])
    mem = torch.cuda.max_memory_allocated() / 2**20 if device.type == "cuda" else peak_rss_mb()
    return {"steps": steps, "steps_per_s": steps / local, "rounds_per_s": rounds / wall, "peak_mb": mem}


def main() -> None:
    """Print the throughput table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, nargs="*", default=[torch.get_num_threads()])
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()
    device = pflnb.device(args.device)
    print(f"torch {torch.__version__}, device {device}, rounds {args.rounds}")
    print(f"{'dataset':<14}{'clients':>8}{'threads':>8}{'steps':>8}{'steps/s':>10}{'rounds/s':>10}{'peak MB':>10}")
    for threads in args.threads:
        torch.set_num_threads(threads)
        for dataset, n, extra in SETTINGS:
            try:
                r = bench(dataset, n, extra, args.rounds, device)
            except DataUnavailable as err:
                print(f"{dataset:<14}{n:>8}  skipped: {err}")
                continue
            print(
                f"{dataset:<14}{n:>8}{threads:>8}{r['steps']:>8}{r['steps_per_s']:>10.1f}{r['rounds_per_s']:>10.2f}{r['peak_mb']:>10.0f}"
            )


if __name__ == "__main__":
    main()
