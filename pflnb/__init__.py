"""pflnb: reproducible personalized federated learning, one notebook per paper."""

from __future__ import annotations

import torch

__version__ = "0.1.0"


def device(name: str | None = None) -> torch.device:
    """Return the torch device to use: ``name`` if given ("auto" or None: CUDA when present, else CPU)."""
    if name in (None, "", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)
