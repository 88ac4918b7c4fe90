"""Fig. 10: feature maps of FedFac's shared and personalized channels of a split conv layer against FedAvg's.

The paper shows one image's maps from a conv layer split at τ = 50 %: FedFac's personalized filters give cleaner,
more specific maps than FedAvg's, its shared ones look like FedAvg's. :class:`FeatureMapJob` reruns a FedFac run (its
final states are not cached) and FedAvg on the same config (same seed: same data, partition and initialization, so
channel j starts from the same filter in both), and records, per client, the correlation of each channel's map with
FedAvg's same channel on the client's first test images, the final split of the layer, and FedAvg's test accuracy.
:func:`channel_similarity` reads it: the mean correlation of the shared and of the personalized channels, per seed;
:func:`fedavg_accuracy`: whether the FedAvg compared with trained at all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from pflnb.experiments.config import ExperimentConfig
from pflnb.experiments.jobs import ConfigJob, check_record, digest, rebuilds
from pflnb.experiments.run import reopen


def channel_correlation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per channel, the Pearson correlation of maps ``a`` and ``b`` (shape (n, C, H, W)) over images and positions
    (NaN where either map is constant)."""
    if a.shape != b.shape or a.ndim != 4:
        raise ValueError(f"channel_correlation needs two (n, C, H, W) arrays of one shape, got {a.shape} and {b.shape}")
    x = np.moveaxis(a, 1, 0).reshape(a.shape[1], -1)
    y = np.moveaxis(b, 1, 0).reshape(b.shape[1], -1)
    x, y = x - x.mean(1, keepdims=True), y - y.mean(1, keepdims=True)
    den = np.sqrt((x * x).sum(1) * (y * y).sum(1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (x * y).sum(1) / den, np.nan)


@torch.no_grad()
def layer_maps(model: torch.nn.Module, layer: str, x: torch.Tensor) -> np.ndarray:
    """The outputs (n, C, H, W) of ``model``'s submodule ``layer`` on images ``x``."""
    out: list[torch.Tensor] = []
    handle = model.get_submodule(layer).register_forward_hook(lambda _m, _i, o: out.append(o.detach()))
    try:
        model.eval()
        model(x)
    finally:
        handle.remove()
    return out[0].cpu().numpy().astype(np.float64)


@dataclasses.dataclass(frozen=True)
class FeatureMapJob(ConfigJob):
    """A FedFac run of ``cfg`` split at one conv layer and FedAvg on the same config: the FedFac run's record with
    ``featuremaps``: the layer, its final split (True = shared), per client the correlation of each channel's map
    with FedAvg's on the client's first ``images`` test images, one client's maps for the figure, and FedAvg's test
    accuracy (``fedavg_test_acc``: a FedAvg that did not train has nothing to be like)."""

    images: int = 4

    def key(self) -> str:
        return digest("feature maps", self.cfg.key(), self.images, "fedavg_test_acc")

    def label(self) -> str:
        return "fig10-fedfac"

    def details(self) -> dict[str, Any]:
        return {**self.describe(), "images": self.images, "config": self.cfg.to_dict()}

    def check(self, record: Any, path: Any) -> dict[str, Any]:
        check_record(record, path)
        if "fedavg_test_acc" not in record.get("featuremaps", {}):
            raise ValueError(f"cached record {path} has no feature maps; delete it or re-run with force=True")
        return record

    def compute(self, root: Any, progress: bool = False) -> dict[str, Any]:
        ff = reopen(self.cfg, progress=progress, cache=False)
        fa = reopen(self.cfg.replace(method="fedavg", method_params={}), progress=progress, cache=False)
        ((layer, mask),) = ff.server["masks"].items()
        ctx_ff, ctx_fa = ff.context(), fa.context()
        corr, example = [], {}
        for cid, client in enumerate(ff.data.clients):
            x = client.test.x[: self.images]
            maps = [
                layer_maps(run.algorithm.eval_module(ctx, cid, run.server, run.clients[cid]), layer, x)
                for run, ctx in ((ff, ctx_ff), (fa, ctx_fa))
            ]
            corr.append(channel_correlation(*maps).tolist())
            if cid == 0:
                example = {"image": x[0].cpu().numpy().tolist(), "fedfac": maps[0][0].tolist(), "fedavg": maps[1][0].tolist()}
        shared = [bool(v) for v in mask.cpu().tolist()]
        maps = {"layer": layer, "shared": shared, "correlation": corr, "example": example}
        acc = fa.record.get("summary", {}).get("test_acc", float("nan"))  # NaN: FedAvg diverged
        return {**ff.record, "featuremaps": {**maps, "fedavg_test_acc": float(acc)}}


@rebuilds
def _feature_map_job(record: dict[str, Any]) -> FeatureMapJob | None:
    """The :class:`FeatureMapJob` behind a record with feature maps (its default number of images; a record made with
    another has another key, which :func:`pflnb.experiments.records.recompute` tells)."""
    return FeatureMapJob(ExperimentConfig.from_dict(record["config"])) if "featuremaps" in record else None


def fedavg_accuracy(records: Sequence[dict[str, Any]], seeds: Sequence[int]) -> dict[int, float]:
    """Per seed, the test accuracy of the FedAvg run the feature maps were compared with."""
    return {int(seed): float(rec["featuremaps"]["fedavg_test_acc"]) for rec, seed in zip(records, seeds)}


def channel_similarity(records: Sequence[dict[str, Any]], seeds: Sequence[int]) -> dict[str, dict[int, float]]:
    """Per group ('shared', 'personalized') and seed: the mean over clients and the group's channels of the correlation
    of FedFac's map with FedAvg's (constant maps left out)."""
    out: dict[str, dict[int, float]] = {"shared": {}, "personalized": {}}
    for rec, seed in zip(records, seeds):
        fm = rec["featuremaps"]
        corr, shared = np.asarray(fm["correlation"], dtype=np.float64), np.asarray(fm["shared"], dtype=bool)
        out["shared"][int(seed)] = float(np.nanmean(corr[:, shared]))
        out["personalized"][int(seed)] = float(np.nanmean(corr[:, ~shared]))
    return out
