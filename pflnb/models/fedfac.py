"""FedFac's reduced model: the paper's FEMNIST net is "2-layer CNN + 2-layer FC"; this is that shape, narrow."""

from __future__ import annotations

from collections.abc import Callable

from pflnb.models.base import PFLModel
from pflnb.models.nets import CNN


def fedfac_cnn(in_channels: int, image_size: int, num_classes: int) -> PFLModel:
    """conv5×5(8)+pool, conv5×5(16)+pool, FC 64, FC 32, head: weight layers 1–4 splittable, head = layer 5."""
    return CNN(num_classes, in_channels, image_size, channels=(8, 16), hidden=(64, 32))


FEDFAC_MODELS: dict[str, Callable[..., PFLModel]] = {"fedfac-cnn": fedfac_cnn}
