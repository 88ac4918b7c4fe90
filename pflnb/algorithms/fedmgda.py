"""FedMGDA+ (Hu et al. 2022): a common descent direction of the clients' updates."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from pflnb.algorithms.partial import PartialFedAvg, PartialParams, aggregation_weights
from pflnb.algorithms.registry import register
from pflnb.fl import state as S
from pflnb.theory.mgda import min_norm_direction


@dataclass(frozen=True)
class FedMGDAParams(PartialParams):
    """FedMGDA+: ``epsilon`` bounds |λ_i − 1/m| (1: plain MGDA; 0: FedAvg of normalized updates);
    ``normalize`` divides each update by its norm; ``rescale`` multiplies the direction by the mean update norm
    so its step is on FedAvg's scale; ``global_lr`` is the server step."""

    epsilon: float = 0.1
    normalize: bool = True
    rescale: bool = True

    def validate(self) -> None:
        """Check ε ≥ 0."""
        super().validate()
        if self.epsilon < 0:
            raise ValueError(f"epsilon must be >= 0, got {self.epsilon}")


@register
class FedMGDA(PartialFedAvg):
    """FedMGDA+: the server moves along the min-norm point d of the hull of the clients' (normalized)
    updates Δ_i = w_i − w, with weights within ε of uniform; then ⟨d, Δ_i⟩ ≥ ‖d‖² for all i when ε ≥ 1, so
    −d is a common descent direction of the client losses (to first order). Non-parameter entries (BN
    statistics) are averaged as in FedAvg."""

    name = "fedmgda+"
    Params = FedMGDAParams
    personalized = False

    def aggregate(self, ctx: Any, server: dict[str, Any], messages: dict[int, dict[str, Any]]) -> dict[str, Any]:
        """w ← w + η_g·d with d the constrained min-norm point of the (normalized) updates."""
        cids = sorted(messages)
        params = [n for n, _ in ctx.model.named_parameters()]
        base = server["model"]
        updates = np.stack(
            [
                S.flatten(S.sub(messages[c]["state"], S.select(base, messages[c]["state"].keys())), params).double().cpu().numpy()
                for c in cids
            ]
        )
        norms = np.linalg.norm(updates, axis=1)
        vecs = updates / np.maximum(norms, 1e-12)[:, None] if self.params.normalize else updates
        d, lam = min_norm_direction(vecs, self.params.epsilon)
        if self.params.normalize and self.params.rescale:
            d = d * norms.mean()
        step = torch.as_tensor(d * self.params.global_lr, dtype=torch.float32, device=base[params[0]].device)
        new_params = S.add(S.select(base, params), S.unflatten(step, S.select(base, params)))
        others = [k for k in messages[cids[0]]["state"] if k not in set(params)]
        new = dict(new_params)
        if others:
            new.update(
                S.weighted_average(
                    [S.select(messages[c]["state"], others) for c in cids], aggregation_weights(ctx, cids, self.params.weights)
                )
            )
        return {**server, "model": S.update(base, new), "lambda": lam.tolist(), "direction_norm": float(np.linalg.norm(d))}

    def round_internals(self, ctx: Any, server: dict[str, Any], clients: list[dict[str, Any]]) -> dict[str, Any]:
        """The QP weights λ and the norm of the applied direction."""
        return {"lambda": server.get("lambda"), "direction_norm": server.get("direction_norm")}
