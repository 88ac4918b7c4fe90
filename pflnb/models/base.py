"""The model contract every algorithm relies on: ``features(x)`` (the body) and ``head`` (the classifier)."""

from __future__ import annotations

import torch
from torch import nn

NORM_TYPES = (nn.BatchNorm1d, nn.BatchNorm2d, nn.GroupNorm, nn.LayerNorm)


class PFLModel(nn.Module):
    """Base class: subclasses define ``features`` (input → penultimate activations h) and ``head``.

    Layer names are explicit attributes (``conv1``, ``bn1``, ``fc1``, ``head``) so algorithms select
    base / head / BN entries by name. ``feat_dim`` is the dimension of h.
    """

    head: nn.Module
    feat_dim: int

    def features(self, x: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        """Penultimate activations h (the input of the head)."""
        raise NotImplementedError

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits: head(features(x))."""
        return self.head(self.features(x))

    def head_keys(self) -> list[str]:
        """State-dict keys of the head (the last linear layer)."""
        return [k for k in self.state_dict() if k.startswith("head.")]

    def body_keys(self) -> list[str]:
        """State-dict keys of everything but the head."""
        head = set(self.head_keys())
        return [k for k in self.state_dict() if k not in head]

    def bn_keys(self) -> list[str]:
        """State-dict keys of normalization layers (weights, biases and running statistics)."""
        keys = []
        for name, module in self.named_modules():
            if isinstance(module, NORM_TYPES):
                prefix = name + "."
                keys += [k for k in self.state_dict() if k.startswith(prefix)]
        return keys

    def layers(self) -> list[tuple[str, list[str]]]:
        """Ordered (layer name, state keys) for each conv/linear layer with its following norm layer.

        A norm layer is grouped with the weight layer before it, so per-layer algorithms (layer-wise
        mixing, neuron partitions, per-layer distances) treat "conv + BN" as one block.
        """
        state_keys = list(self.state_dict())
        groups: list[tuple[str, list[str]]] = []
        for name, module in self.named_modules():
            if isinstance(module, nn.Conv2d | nn.Linear):
                groups.append((name, [k for k in state_keys if k.startswith(name + ".")]))
            elif isinstance(module, NORM_TYPES) and groups:
                groups[-1][1].extend(k for k in state_keys if k.startswith(name + "."))
        covered = {k for _, ks in groups for k in ks}
        rest = [k for k in state_keys if k not in covered]
        if rest:
            raise RuntimeError(f"state keys outside any layer: {rest[:5]}")
        return groups
