"""Architectures of the five papers and their reduced-scale stand-ins."""

from __future__ import annotations

import torch
from torch import nn

from pflnb.models.base import PFLModel
from pflnb.models.pooling import AdaptiveAvgPool2d


def _conv_out(size: int, pools: int) -> int:
    for _ in range(pools):
        size //= 2
    return size


class DigitModel(PFLModel):
    """FedBN's DigitModel: 3 conv(5×5)+BN, 2 FC+BN (512-d feature), linear head (FedBN, LG-Mix, Fed-CO2)."""

    def __init__(self, num_classes: int = 10, in_channels: int = 3, image_size: int = 28) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 64, 5, 1, 2)
        self.bn1 = nn.BatchNorm2d(64)
        self.conv2 = nn.Conv2d(64, 64, 5, 1, 2)
        self.bn2 = nn.BatchNorm2d(64)
        self.conv3 = nn.Conv2d(64, 128, 5, 1, 2)
        self.bn3 = nn.BatchNorm2d(128)
        side = _conv_out(image_size, 2)
        self.fc1 = nn.Linear(128 * side * side, 2048)
        self.bn4 = nn.BatchNorm1d(2048)
        self.fc2 = nn.Linear(2048, 512)
        self.bn5 = nn.BatchNorm1d(512)
        self.head = nn.Linear(512, num_classes)
        self.feat_dim = 512
        self.pool = nn.MaxPool2d(2)
        self.relu = nn.ReLU()

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Penultimate 512-d activations relu(bn5(fc2(·)))."""
        x = self.pool(self.relu(self.bn1(self.conv1(x))))
        x = self.pool(self.relu(self.bn2(self.conv2(x))))
        x = self.relu(self.bn3(self.conv3(x)))
        x = torch.flatten(x, 1)
        x = self.relu(self.bn4(self.fc1(x)))
        return self.relu(self.bn5(self.fc2(x)))


class SmallBNCNN(PFLModel):
    """Reduced DigitModel for digits5-lite: conv3×3(32)+BN, conv3×3(64)+BN, pool, FC 256+BN, FC 128+BN, head."""

    def __init__(self, num_classes: int = 10, in_channels: int = 3, image_size: int = 16, width: int = 32) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, width, 3, 1, 1)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, 2 * width, 3, 1, 1)
        self.bn2 = nn.BatchNorm2d(2 * width)
        pools = 2 if image_size >= 16 else 1
        self.pool = nn.MaxPool2d(2)
        self.pools = pools
        side = _conv_out(image_size, pools)
        self.fc1 = nn.Linear(2 * width * side * side, 256)
        self.bn3 = nn.BatchNorm1d(256)
        self.fc2 = nn.Linear(256, 128)
        self.bn4 = nn.BatchNorm1d(128)
        self.head = nn.Linear(128, num_classes)
        self.feat_dim = 128
        self.relu = nn.ReLU()

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Penultimate 128-d activations relu(bn4(fc2(·)))."""
        x = self.relu(self.bn1(self.conv1(x)))
        if self.pools == 2:
            x = self.pool(x)
        x = self.pool(self.relu(self.bn2(self.conv2(x))))
        x = torch.flatten(x, 1)
        x = self.relu(self.bn3(self.fc1(x)))
        return self.relu(self.bn4(self.fc2(x)))


class CNN(PFLModel):
    """McMahan-style CNN: conv5×5 + ReLU + pool blocks, FC hidden layers, linear head (FMNIST / CIFAR).

    ``channels`` sets the conv widths (one pool per block), ``hidden`` the FC widths; ``norm`` adds
    BatchNorm after each conv/FC ("bn") or none ("none").
    """

    def __init__(
        self,
        num_classes: int = 10,
        in_channels: int = 1,
        image_size: int = 28,
        channels: tuple[int, ...] = (32, 64),
        hidden: tuple[int, ...] = (512,),
        norm: str = "none",
    ) -> None:
        super().__init__()
        if norm not in ("none", "bn"):
            raise ValueError(f"norm must be 'none' or 'bn', got {norm!r}")
        self.norm = norm
        self.n_conv = len(channels)
        self.n_fc = len(hidden)
        c_in = in_channels
        for i, c in enumerate(channels, 1):
            setattr(self, f"conv{i}", nn.Conv2d(c_in, c, 5, 1, 2))
            if norm == "bn":
                setattr(self, f"bn{i}", nn.BatchNorm2d(c))
            c_in = c
        side = _conv_out(image_size, len(channels))
        if side < 1:
            raise ValueError(f"image_size {image_size} is too small for {len(channels)} pooling blocks")
        d_in = c_in * side * side
        for j, h in enumerate(hidden, 1):
            setattr(self, f"fc{j}", nn.Linear(d_in, h))
            if norm == "bn":
                setattr(self, f"bn{len(channels) + j}", nn.BatchNorm1d(h))
            d_in = h
        self.head = nn.Linear(d_in, num_classes)
        self.feat_dim = d_in
        self.pool = nn.MaxPool2d(2)
        self.relu = nn.ReLU()

    def _norm(self, i: int, x: torch.Tensor) -> torch.Tensor:
        return getattr(self, f"bn{i}")(x) if self.norm == "bn" else x

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Activations of the last hidden FC layer (or the flattened conv output when there is none)."""
        for i in range(1, self.n_conv + 1):
            x = self.pool(self.relu(self._norm(i, getattr(self, f"conv{i}")(x))))
        x = torch.flatten(x, 1)
        for j in range(1, self.n_fc + 1):
            x = self.relu(self._norm(self.n_conv + j, getattr(self, f"fc{j}")(x)))
        return x


class AlexNetBN(PFLModel):
    """FedBN's AlexNet with BN after every conv and FC (Office-Caltech10, DomainNet; 256×256 inputs)."""

    def __init__(self, num_classes: int = 10, in_channels: int = 3) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 64, 11, 4, 2)
        self.bn1 = nn.BatchNorm2d(64)
        self.conv2 = nn.Conv2d(64, 192, 5, 1, 2)
        self.bn2 = nn.BatchNorm2d(192)
        self.conv3 = nn.Conv2d(192, 384, 3, 1, 1)
        self.bn3 = nn.BatchNorm2d(384)
        self.conv4 = nn.Conv2d(384, 256, 3, 1, 1)
        self.bn4 = nn.BatchNorm2d(256)
        self.conv5 = nn.Conv2d(256, 256, 3, 1, 1)
        self.bn5 = nn.BatchNorm2d(256)
        self.avgpool = AdaptiveAvgPool2d((6, 6))  # CUDA-deterministic backward
        self.fc1 = nn.Linear(256 * 6 * 6, 4096)
        self.bn6 = nn.BatchNorm1d(4096)
        self.fc2 = nn.Linear(4096, 4096)
        self.bn7 = nn.BatchNorm1d(4096)
        self.head = nn.Linear(4096, num_classes)
        self.feat_dim = 4096
        self.pool = nn.MaxPool2d(3, 2)
        self.relu = nn.ReLU()

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """4096-d activations relu(bn7(fc2(·)))."""
        x = self.pool(self.relu(self.bn1(self.conv1(x))))
        x = self.pool(self.relu(self.bn2(self.conv2(x))))
        x = self.relu(self.bn3(self.conv3(x)))
        x = self.relu(self.bn4(self.conv4(x)))
        x = self.pool(self.relu(self.bn5(self.conv5(x))))
        x = torch.flatten(self.avgpool(x), 1)
        x = self.relu(self.bn6(self.fc1(x)))
        return self.relu(self.bn7(self.fc2(x)))


class MLP(PFLModel):
    """ReLU MLP on flattened inputs: ``hidden`` widths, linear head. ``hidden=(m,)`` is the two-layer net."""

    def __init__(self, in_dim: int, num_classes: int = 10, hidden: tuple[int, ...] = (200,), bias: bool = True) -> None:
        super().__init__()
        d = in_dim
        self.n_fc = len(hidden)
        for j, h in enumerate(hidden, 1):
            setattr(self, f"fc{j}", nn.Linear(d, h, bias=bias))
            d = h
        self.head = nn.Linear(d, num_classes, bias=bias)
        self.feat_dim = d
        self.relu = nn.ReLU()

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Activations of the last hidden layer."""
        x = torch.flatten(x, 1)
        for j in range(1, self.n_fc + 1):
            x = self.relu(getattr(self, f"fc{j}")(x))
        return x
