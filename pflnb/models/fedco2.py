"""Fed-CO2 architectures: the classifier ``head`` is the whole fully-connected block (with its BN1d layers).

Fed-CO2's inter-client knowledge transfer ships a client's offline *classifier* to the other clients; in
the authors' code that classifier is every FC layer after the flatten, BatchNorm1d included (spec §2.1).
These nets therefore split as ``features`` = conv stack + flatten and ``head`` = FC block, so that
``PFLModel.head_keys()`` (entries ``head.*``) is exactly what Fed-CO2 ships.
"""

from __future__ import annotations

from collections import OrderedDict

import torch
from torch import nn

from pflnb.models.base import PFLModel
from pflnb.models.pooling import AdaptiveAvgPool2d


def fc_block(d_in: int, hidden: tuple[int, ...], num_classes: int, first_bn: int) -> nn.Sequential:
    """fc → BN1d → ReLU for each hidden width, then the last linear layer (names fc1, bnK, ..., out)."""
    layers: OrderedDict[str, nn.Module] = OrderedDict()
    for j, h in enumerate(hidden, 1):
        layers[f"fc{j}"] = nn.Linear(d_in, h)
        layers[f"bn{first_bn + j - 1}"] = nn.BatchNorm1d(h)
        layers[f"relu{j}"] = nn.ReLU()
        d_in = h
    layers["out"] = nn.Linear(d_in, num_classes)
    return nn.Sequential(layers)


class CO2CNN(PFLModel):
    """Conv(+BN+ReLU, max-pool on the first ``pools`` blocks) stack, flatten, FC block head.

    Defaults: the miniature DigitModel of spec §6.2 (conv3×3 16, 32; head 128-64-10). ``co2-digit``
    (FedBN's DigitModel, spec §4.2) and ``co2-cnnb`` (CNN_B for CIFAR) are other settings.
    """

    def __init__(
        self,
        num_classes: int = 10,
        in_channels: int = 3,
        image_size: int = 16,
        channels: tuple[int, ...] = (16, 32),
        kernel: int = 3,
        padding: int | None = None,
        pools: int | None = None,
        hidden: tuple[int, ...] = (128, 64),
    ) -> None:
        super().__init__()
        padding = kernel // 2 if padding is None else padding
        self.n_conv = len(channels)
        self.pools = len(channels) if pools is None else pools
        c_in, side = in_channels, image_size
        for i, c in enumerate(channels, 1):
            setattr(self, f"conv{i}", nn.Conv2d(c_in, c, kernel, 1, padding))
            setattr(self, f"bn{i}", nn.BatchNorm2d(c))
            side = side + 2 * padding - kernel + 1
            if i <= self.pools:
                side //= 2
            c_in = c
        if side < 1:
            raise ValueError(f"image_size {image_size} is too small for this conv stack")
        self.pool = nn.MaxPool2d(2)
        self.relu = nn.ReLU()
        self.feat_dim = c_in * side * side
        self.head = fc_block(self.feat_dim, hidden, num_classes, first_bn=len(channels) + 1)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Flattened output of the conv stack (the input of Fed-CO2's classifier)."""
        for i in range(1, self.n_conv + 1):
            x = self.relu(getattr(self, f"bn{i}")(getattr(self, f"conv{i}")(x)))
            if i <= self.pools:
                x = self.pool(x)
        return torch.flatten(x, 1)


class CO2AlexNet(PFLModel):
    """FedBN's AlexNet-BN (Office-Caltech10, DomainNet) with the FC block fc1-BN-fc2-BN-fc3 as ``head``."""

    def __init__(self, num_classes: int = 10, in_channels: int = 3) -> None:
        super().__init__()
        spec = [(in_channels, 64, 11, 4, 2), (64, 192, 5, 1, 2), (192, 384, 3, 1, 1), (384, 256, 3, 1, 1), (256, 256, 3, 1, 1)]
        for i, (ci, co, k, s, p) in enumerate(spec, 1):
            setattr(self, f"conv{i}", nn.Conv2d(ci, co, k, s, p))
            setattr(self, f"bn{i}", nn.BatchNorm2d(co))
        self.pool = nn.MaxPool2d(3, 2)
        self.avgpool = AdaptiveAvgPool2d((6, 6))  # CUDA-deterministic backward
        self.relu = nn.ReLU()
        self.feat_dim = 256 * 6 * 6
        self.head = fc_block(self.feat_dim, (4096, 4096), num_classes, first_bn=6)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Flattened 9216-d output of the conv stack after adaptive average pooling."""
        for i in range(1, 6):
            x = self.relu(getattr(self, f"bn{i}")(getattr(self, f"conv{i}")(x)))
            if i in (1, 2, 5):
                x = self.pool(x)
        return torch.flatten(self.avgpool(x), 1)


FEDCO2_MODELS = {
    "co2-cnn": lambda c, s, k: CO2CNN(k, c, s),
    "co2-digit": lambda c, s, k: CO2CNN(k, c, s, channels=(64, 64, 128), kernel=5, pools=2, hidden=(2048, 512)),
    "co2-cnnb": lambda c, s, k: CO2CNN(k, c, s, channels=(16, 32), kernel=5, padding=0, hidden=(120, 84)),
    "co2-alexnet": lambda c, s, k: CO2AlexNet(k, c),
}
