"""Models: each exposes ``features(x)`` and ``head``; ``build_model`` picks one by name."""

from __future__ import annotations

from collections.abc import Callable

from pflnb.models.base import PFLModel
from pflnb.models.fedco2 import FEDCO2_MODELS
from pflnb.models.fedfac import FEDFAC_MODELS
from pflnb.models.lgmix import ResNet18
from pflnb.models.nets import CNN, MLP, AlexNetBN, DigitModel, SmallBNCNN
from pflnb.models.pmixfed import PMIXFED_MODELS

MODELS: dict[str, Callable[..., PFLModel]] = {
    "digit": lambda c, s, k: DigitModel(k, c, s),
    "small-bn-cnn": lambda c, s, k: SmallBNCNN(k, c, s),
    "tiny-bn-cnn": lambda c, s, k: SmallBNCNN(k, c, s, width=16),
    "cnn": lambda c, s, k: CNN(k, c, s),
    "cnn-bn": lambda c, s, k: CNN(k, c, s, norm="bn"),
    "cifar-cnn": lambda c, s, k: CNN(k, c, s, channels=(64, 64), hidden=(384, 192)),
    # the CIFAR CNN's layout (two 5×5 conv blocks, two hidden FC layers) at a quarter of its widths
    "small-cnn": lambda c, s, k: CNN(k, c, s, channels=(16, 16), hidden=(96, 48)),
    "alexnet-bn": lambda c, s, k: AlexNetBN(k, c),
    "mlp": lambda c, s, k: MLP(c * s * s, k, hidden=(200,)),
    "mlp2": lambda c, s, k: MLP(c * s * s, k, hidden=(200, 200)),
    "resnet18": lambda c, s, k: ResNet18(k, c),
    **FEDCO2_MODELS,
    **FEDFAC_MODELS,
    **PMIXFED_MODELS,
}


def build_model(name: str, input_shape: tuple[int, int, int], num_classes: int) -> PFLModel:
    """Instantiate model ``name`` for inputs of shape (C, H, W) and ``num_classes`` outputs."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of {sorted(MODELS)}")
    c, h, w = input_shape
    if h != w:
        raise ValueError(f"models expect square images, got {h}×{w}")
    return MODELS[name](c, h, num_classes)


__all__ = ["CNN", "MLP", "MODELS", "AlexNetBN", "DigitModel", "PFLModel", "SmallBNCNN", "build_model"]
