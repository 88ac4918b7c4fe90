"""pMixFed's architectures: the paper's CNNs (MNIST 2 conv + 2 FC, CIFAR 4 conv + 1 FC), MobileNetV1 with
its 15 blocks (1 stem conv + 13 depthwise-separable blocks + FC), and equal-width deep MLPs for the depth
experiment and the residual depth-cuttable MLP of the heterogeneous-depth experiment (Table 3). Channel widths
are not given in the paper ("Appendix ???"); the ones here are our choice."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from pflnb.models.base import PFLModel
from pflnb.models.nets import CNN, MLP

MOBILENET_CFG: tuple[tuple[int, int], ...] = (
    (64, 1),
    (128, 2),
    (128, 1),
    (256, 2),
    (256, 1),
    (512, 2),
    (512, 1),
    (512, 1),
    (512, 1),
    (512, 1),
    (512, 1),
    (1024, 2),
    (1024, 1),
)


class DWSeparable(nn.Module):
    """Depthwise 3×3 conv + BN + ReLU, pointwise 1×1 conv + BN + ReLU (one MobileNetV1 block)."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.dw = nn.Conv2d(c_in, c_in, 3, stride, 1, groups=c_in, bias=False)
        self.bn1 = nn.BatchNorm2d(c_in)
        self.pw = nn.Conv2d(c_in, c_out, 1, 1, 0, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The block's output."""
        return self.relu(self.bn2(self.pw(self.relu(self.bn1(self.dw(x))))))


class MobileNetV1(PFLModel):
    """MobileNetV1 for 32×32 inputs (stride-1 stem): n = 15 blocks for layer-wise mixing (``blocks()``)."""

    def __init__(self, num_classes: int = 10, in_channels: int = 3, width: float = 1.0) -> None:
        super().__init__()
        c0 = int(32 * width)
        self.conv1 = nn.Conv2d(in_channels, c0, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c0)
        c_in = c0
        blocks = []
        for c, s in MOBILENET_CFG:
            c_out = int(c * width)
            blocks.append(DWSeparable(c_in, c_out, s))
            c_in = c_out
        self.blocks_seq = nn.Sequential(*blocks)
        self.head = nn.Linear(c_in, num_classes)
        self.feat_dim = c_in
        self.relu = nn.ReLU()

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Globally average-pooled output of the last block."""
        x = self.blocks_seq(self.relu(self.bn1(self.conv1(x))))
        return torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)

    def blocks(self) -> list[tuple[str, list[str]]]:
        """(name, state keys) of the 15 blocks: stem, 13 depthwise-separable blocks, head."""
        keys = list(self.state_dict())
        out = [("stem", [k for k in keys if k.startswith(("conv1.", "bn1."))])]
        out += [(f"block{i + 1}", [k for k in keys if k.startswith(f"blocks_seq.{i}.")]) for i in range(len(MOBILENET_CFG))]
        out.append(("head", [k for k in keys if k.startswith("head.")]))
        return out


def deep_mlp(in_dim: int, num_classes: int, depth: int, width: int = 64) -> MLP:
    """An equal-width MLP with ``depth`` blocks (depth − 1 hidden layers + the head)."""
    return MLP(in_dim, num_classes, hidden=(width,) * (depth - 1))


class DepthMLP(MLP):
    """Equal-width residual MLP whose depth can be cut per client (Table 3, heterogeneous model sizes).

    Blocks (``layers()``): ``fc1`` (input → width, ReLU), residual blocks ``fc2 … fc{n−1}`` (h ← h + ReLU(W h + b))
    and the head: n blocks. With ``active_depth = m`` the forward pass uses blocks 1..m−1 and the head (the
    skipped residual blocks are exactly the identity), so a depth-m client owns global blocks 1..m−1 plus the
    global head (spec §2.6 item 5). ``active_depth = None`` uses every block."""

    def __init__(self, in_dim: int, num_classes: int, depth: int, width: int = 64) -> None:
        if depth < 2:
            raise ValueError(f"depth must be >= 2, got {depth}")
        super().__init__(in_dim, num_classes, hidden=(width,) * (depth - 1))
        self.depth = depth
        self.active_depth: int | None = None

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Activations after block ``active_depth − 1`` (every hidden block when None)."""
        m = self.depth if self.active_depth is None else self.active_depth
        if not 2 <= m <= self.depth:
            raise ValueError(f"active_depth must be in [2, {self.depth}], got {m}")
        x = self.relu(self.fc1(torch.flatten(x, 1)))
        for j in range(2, m):
            x = x + self.relu(getattr(self, f"fc{j}")(x))
        return x


PMIXFED_MODELS: dict[str, Callable[..., PFLModel]] = {
    "pmixfed-cnn": lambda c, s, k: CNN(k, c, s, channels=(16, 32), hidden=(64,)),  # MNIST CNN, reduced width: n = 4
    "pmixfed-cifar-cnn": lambda c, s, k: CNN(k, c, s, channels=(32, 64, 128, 128), hidden=()),  # 4 conv + 1 FC: n = 5
    "mobilenet-v1": lambda c, s, k: MobileNetV1(k, c),  # n = 15 blocks
    "pmixfed-mlp4": lambda c, s, k: deep_mlp(c * s * s, k, 4),
    "pmixfed-mlp8": lambda c, s, k: deep_mlp(c * s * s, k, 8),
    "pmixfed-mlp15": lambda c, s, k: deep_mlp(c * s * s, k, 15),
    "pmixfed-depth-mlp15": lambda c, s, k: DepthMLP(c * s * s, k, 15, width=32),  # Table 3: per-client depth
}
