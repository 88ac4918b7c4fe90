"""Adaptive average pooling whose backward pass is deterministic on CUDA.

``torch.nn.AdaptiveAvgPool2d`` differentiates on CUDA with atomic adds, so under
``torch.use_deterministic_algorithms(True)`` its backward raises (PyTorch has no deterministic kernel for it).
This module computes the same bins (PyTorch's: output cell i averages inputs ⌊i·n/k⌋ .. ⌈(i+1)·n/k⌉ − 1) as two
small matrix products, whose gradients are ordinary (deterministic) matmuls: P_h · x · P_wᵀ.
"""

from __future__ import annotations

import torch
from torch import nn


def pooling_matrix(n_in: int, n_out: int, like: torch.Tensor) -> torch.Tensor:
    """The (n_out × n_in) averaging matrix of adaptive pooling along one axis, on ``like``'s device and dtype."""
    i = torch.arange(n_out, device=like.device)
    start = (i * n_in) // n_out
    end = ((i + 1) * n_in + n_out - 1) // n_out
    j = torch.arange(n_in, device=like.device)
    m = ((j[None, :] >= start[:, None]) & (j[None, :] < end[:, None])).to(like.dtype)
    return m / m.sum(1, keepdim=True)


def adaptive_avg_pool2d(x: torch.Tensor, output_size: int | tuple[int, int]) -> torch.Tensor:
    """Adaptive average pooling of the last two axes of ``x`` to ``output_size`` (PyTorch's bins)."""
    oh, ow = (output_size, output_size) if isinstance(output_size, int) else output_size
    h, w = x.shape[-2:]
    if (oh, ow) == (h, w):
        return x
    if (oh, ow) == (1, 1):
        return x.mean((-2, -1), keepdim=True)
    return pooling_matrix(h, oh, x) @ x @ pooling_matrix(w, ow, x).T


class AdaptiveAvgPool2d(nn.Module):
    """Drop-in for ``nn.AdaptiveAvgPool2d`` (no parameters, same bins) with a CUDA-deterministic backward."""

    def __init__(self, output_size: int | tuple[int, int]) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Pooled activations."""
        return adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self) -> str:
        """The output size, as torch's module prints it."""
        return f"output_size={self.output_size}"
