"""Does each pinned kernel setting take effect, and what does pinning cost?

The same engine runs execute in fresh subprocesses (the libraries read their variables once, at their first kernel)
under several settings, alternated and repeated in one session:

- ``native``: nothing pinned (this CPU's fastest paths: AVX-512 where it has it);
- ``portable``: the pinned setting of every reproduction (torch and oneDNN at AVX2, MKL on its vendor-neutral branch);
- ``portable`` less one variable (that family back on its native path): shows that each variable changes the record;
- ``avx2``: the pin before 2026-11-28 (MKL's AVX2 branch, honoured on Intel CPUs only);
- ``generic``: torch's kernels on their non-vectorised path (``make robustness``'s perturbation).

For each setting: a digest of the runs' per-round metrics (equal digests = bit-identical records) and the median wall
time of the runs (best of the repetitions), with its ratio to ``native``. Usage::

    python benchmarks/kernels.py --repeats 3 --out benchmarks/results/kernels_cpu.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pflnb import kernels  # noqa: E402

# One small run of each kind the reproductions use: a BN CNN on digits5-lite (conv: oneDNN), an MLP on Fashion-MNIST
# 14×14 (matmul: MKL), FedFac's net with Adam (elementwise: torch's kernels).
RUNS = [
    dict(method="fedbn", dataset="digits5-lite", model="small-bn-cnn", rounds=4),
    dict(method="fedavg", dataset="fmnist", model="mlp", rounds=4, num_clients=10, max_samples=2000, image_size=14),
    dict(
        method="fedavg",
        dataset="fmnist",
        model="fedfac-cnn",
        optimizer="adam",
        lr=1e-3,
        rounds=4,
        num_clients=10,
        max_samples=2000,
        image_size=14,
    ),
]

CHILD = r"""
import hashlib, json, sys, time, tempfile
import pflnb
from pflnb.experiments import profile_config, run
runs = json.loads(sys.argv[1])
digest, seconds = hashlib.sha256(), []
with tempfile.TemporaryDirectory() as tmp:
    for fields in runs:
        cfg = profile_config("cpu", fields["dataset"], seed=0, threads=1).replace(**fields)
        t0 = time.perf_counter()
        rec = run(cfg, root=tmp, cache=False, progress=False)
        seconds.append(time.perf_counter() - t0)
        digest.update(json.dumps([rec["evals"], [r["client_metrics"] for r in rec["rounds"]]], sort_keys=True).encode())
print(json.dumps({"digest": digest.hexdigest()[:16], "seconds": seconds, "kernels": pflnb.kernels.describe()}))
"""


def settings() -> dict[str, dict[str, str]]:
    """Name → environment of each setting measured."""
    pinned = kernels.MODES[kernels.DEFAULT]
    out = {"native": {kernels.ENV: "native"}, kernels.DEFAULT: {kernels.ENV: kernels.DEFAULT}}
    for var in kernels.VARIABLES:  # the pinned setting less one variable: native mode with the two others set by hand
        out[f"{kernels.DEFAULT} without {var}"] = {kernels.ENV: "native", **{k: v for k, v in pinned.items() if k != var}}
    out["avx2"] = {kernels.ENV: "avx2"}
    out["generic"] = {kernels.ENV: "generic"}
    return out


def measure(env: dict[str, str]) -> dict:
    """One subprocess running every run of :data:`RUNS` under ``env``."""
    base = {k: v for k, v in os.environ.items() if k not in (*kernels.VARIABLES, kernels.ENV, kernels.HOLD_ENV)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(RUNS)], env={**base, **env}, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None, help="write the table as Markdown here")
    args = ap.parse_args()
    named = settings()
    seen: dict[str, list[dict]] = {n: [] for n in named}
    for _ in range(args.repeats):  # alternated: a busy moment costs every setting alike
        for name, env in named.items():
            seen[name].append(measure(env))
    ref = statistics.median(sum(r["seconds"]) for r in seen["native"])
    pinned_digest = seen[kernels.DEFAULT][0]["digest"]
    lines = [
        f"# Pinned CPU kernels: effect and cost ({time.strftime('%Y-%m-%d')})",
        "",
        f"CPU: {kernels.cpu_model()} ({platform.machine()}); {len(RUNS)} engine runs per setting "
        f"(`benchmarks/kernels.py`, {args.repeats} alternated repetitions, 1 thread).",
        "",
        f"| setting | torch capability | records (digest) | equal to the pinned {kernels.DEFAULT} "
        "| time of the runs (median) | vs native |",
        "|---|---|---|---|---|---|",
    ]
    for name, results in seen.items():
        digests = {r["digest"] for r in results}
        assert len(digests) == 1, f"{name}: the same setting gave different records {digests}"
        t = statistics.median(sum(r["seconds"]) for r in results)
        same = "yes" if results[0]["digest"] == pinned_digest else "no"
        lines.append(
            f"| {name} | {results[0]['kernels']['capability']} | `{results[0]['digest']}` | {same} | {t:.2f} s | {t / ref:.2f}× |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
