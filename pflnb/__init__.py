"""pflnb: reproducible personalized federated learning, one notebook per paper."""

from __future__ import annotations

import os

import torch

__version__ = "0.1.0"


def set_threads(n: int | None = None) -> int:
    """Set torch's intra-op threads to ``n`` (default: ``$PFLNB_THREADS`` if set); return the count in use.

    Small models on a small CPU are often fastest with one thread, and multi-threaded torch degrades badly
    when several processes share the cores (measured in benchmarks/engine_throughput.py).
    """
    if n is None and os.environ.get("PFLNB_THREADS"):
        n = int(os.environ["PFLNB_THREADS"])
    if n is not None:
        if n < 1:
            raise ValueError(f"threads must be >= 1, got {n}")
        torch.set_num_threads(n)
    return torch.get_num_threads()


set_threads()


def device(name: str | None = None) -> torch.device:
    """Return the torch device to use: ``name`` if given ("auto" or None: CUDA when present, else CPU)."""
    if name in (None, "", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)
