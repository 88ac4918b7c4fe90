"""ResNet-18 for LG-Mix's Office-Caltech10 and DomainNet settings (torchvision's architecture, random init)."""

from __future__ import annotations

import torch
from torch import nn

from pflnb.models.base import PFLModel


class ResNet18(PFLModel):
    """torchvision ResNet-18 body (no pretrained weights are downloaded) with a linear head on the 512-d
    pooled feature; ``features(x)`` is the input of the head, as LG-Mix's Eq. (6) needs."""

    def __init__(self, num_classes: int = 10, in_channels: int = 3) -> None:
        super().__init__()
        from torchvision.models import resnet18

        body = resnet18(weights=None)
        if in_channels != 3:
            body.conv1 = nn.Conv2d(in_channels, 64, 7, 2, 3, bias=False)
        body.fc = nn.Identity()
        self.body = body
        self.head = nn.Linear(512, num_classes)
        self.feat_dim = 512

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """512-d globally pooled activations."""
        return self.body(x)
