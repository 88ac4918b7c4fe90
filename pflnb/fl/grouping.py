"""Which local plans run together in one batched call, and what each row (run × client) takes on its own: the plan's
signature (:func:`plan_signature`: its phases but the per-row values, slots, anchors, values, split, model attributes)
and the per-row learning rates and term floats (:func:`row_lrs`, :func:`row_values`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from pflnb.fl.plan import LocalPlan, Phase, Term


def row_lrs(plans: Sequence[LocalPlan], j: int) -> list[float] | None:
    """The learning rate of phase ``j`` of each plan when they differ (runs of several rates stacked), else None."""
    lrs = [float(p.phases[j].optim.lr) for p in plans]
    return None if len(set(lrs)) == 1 else lrs


def row_values(plans: Sequence[LocalPlan], j: int) -> dict[str, list[float]]:
    """What differs by row in phase ``j`` of plans of one signature: ``lr`` (the phase's rate) and ``term<i>.<name>``
    (a float field of term i, e.g. FedProx's μ), each one value per plan; only the entries whose values differ."""
    out: dict[str, list[float]] = {}
    lrs = row_lrs(plans, j)
    if lrs is not None:
        out["lr"] = lrs
    for i, term in enumerate(plans[0].phases[j].terms):
        for name in _float_fields(term):
            values = [float(getattr(p.phases[j].terms[i], name)) for p in plans]
            if len(set(values)) > 1:
                out[f"term{i}.{name}"] = values
    return out


def _float_fields(term: Term) -> list[str]:
    """The float fields ``term`` declares it takes per row (:attr:`~pflnb.fl.plan.Term.per_row`: hyperparameters its
    code uses in tensor arithmetic only, never in a Python branch)."""
    return [name for name in term.per_row if type(getattr(term, name)) is float]


_PER_ROW = "<per row>"  # a per-row field's place in a plan signature (never equal to a real value, None included)


def _phase_shape(phase: Phase) -> tuple:
    """``phase``'s fields without the values a stacked step takes per row: its learning rate and, in a training
    phase, the float fields its terms declare per row (FedProx's μ; :func:`row_values`)."""
    fields = tuple((f.name, getattr(phase, f.name)) for f in dataclasses.fields(phase) if f.name not in ("optim", "terms"))
    if phase.kind == "train":
        terms = tuple(
            (
                type(t),
                tuple((f.name, _PER_ROW if f.name in _float_fields(t) else getattr(t, f.name)) for f in dataclasses.fields(t)),
            )
            for t in phase.terms
        )
    else:
        terms = phase.terms
    return (*fields, terms, dataclasses.replace(phase.optim, lr=0.0))


def plan_signature(plan: LocalPlan) -> tuple:
    """What must be equal for plans to run in one group: phases (but the values taken per row: learning rates and
    the float fields of training terms, :func:`row_values`), slots, anchors, values, split, model attributes."""
    return (
        tuple(_phase_shape(p) for p in plan.phases),
        tuple(sorted(plan.models)),
        tuple(sorted(plan.anchors)),
        tuple(sorted(plan.values)),
        tuple(sorted(plan.columns)),
        plan.split,
        plan.model_attrs,
        plan.fuse,
        plan.mix,
        plan.fuse_reduction,
    )
