"""State-dict algebra: the one place where model states are averaged, mixed, subtracted and selected.

A state is a plain ``dict[str, Tensor]`` (a model's ``state_dict()``). Floating-point entries take part in
arithmetic; integer entries (BN ``num_batches_tracked``) are carried over from the first operand, since
averaging a counter has no meaning.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence

import torch

State = dict[str, torch.Tensor]

BN_PATTERN = re.compile(r"(^|\.)(bn\w*|norm\w*)\.")


def is_float(t: torch.Tensor) -> bool:
    """True for entries that take part in arithmetic (floating point)."""
    return t.is_floating_point()


def clone(state: Mapping[str, torch.Tensor]) -> State:
    """Deep copy of a state (detached)."""
    return {k: v.detach().clone() for k, v in state.items()}


def zeros_like(state: Mapping[str, torch.Tensor]) -> State:
    """A state of zeros with the same keys, shapes and dtypes."""
    return {k: torch.zeros_like(v) for k, v in state.items()}


def _check_keys(states: Sequence[Mapping[str, torch.Tensor]]) -> list[str]:
    keys = list(states[0].keys())
    for s in states[1:]:
        if set(s.keys()) != set(keys):
            missing = set(keys) ^ set(s.keys())
            raise KeyError(f"states have different keys: {sorted(missing)[:5]}")
    return keys


def weighted_average(states: Sequence[Mapping[str, torch.Tensor]], weights: Sequence[float] | None = None) -> State:
    """Σ_i w_i s_i / Σ_i w_i over floating entries (uniform weights when None); integers from states[0]."""
    if len(states) == 0:
        raise ValueError("weighted_average needs at least one state")
    keys = _check_keys(states)
    # the weights are host-side scalars (read back with tolist), so they live on the CPU whatever the states' device
    cpu = torch.device("cpu")
    raw = [1.0] * len(states) if weights is None else weights
    w = torch.as_tensor(raw, dtype=torch.float64, device=cpu)
    if w.shape[0] != len(states) or bool((w < 0).any()) or float(w.sum()) <= 0:
        raise ValueError("weights must be non-negative, one per state, with a positive sum")
    w = w / w.sum()
    out: State = {}
    for k in keys:
        ref = states[0][k]
        if not is_float(ref):
            out[k] = ref.detach().clone()
            continue
        acc = torch.zeros_like(ref, dtype=torch.float64)
        for wi, s in zip(w.tolist(), states):
            acc.add_(s[k].detach().to(torch.float64), alpha=wi)
        out[k] = acc.to(ref.dtype)
    return out


def add(a: Mapping[str, torch.Tensor], b: Mapping[str, torch.Tensor], alpha: float = 1.0) -> State:
    """a + alpha·b over floating entries; integers from a."""
    return {k: (v + alpha * b[k]) if is_float(v) else v.clone() for k, v in a.items()}


def sub(a: Mapping[str, torch.Tensor], b: Mapping[str, torch.Tensor]) -> State:
    """a − b over floating entries (an update Δ); integer entries become zero."""
    return {k: (v - b[k]) if is_float(v) else torch.zeros_like(v) for k, v in a.items()}


def scale(a: Mapping[str, torch.Tensor], c: float) -> State:
    """c·a over floating entries; integers unchanged."""
    return {k: (v * c) if is_float(v) else v.clone() for k, v in a.items()}


def mix(a: Mapping[str, torch.Tensor], b: Mapping[str, torch.Tensor], lam: float | Mapping[str, float]) -> State:
    """λ·a + (1−λ)·b per entry; ``lam`` is one number or a per-key mapping (layer-wise mixing)."""
    out: State = {}
    for k, v in a.items():
        if not is_float(v):
            out[k] = v.clone()
            continue
        lk = lam[k] if isinstance(lam, Mapping) else lam
        out[k] = lk * v + (1.0 - lk) * b[k]
    return out


def select(state: Mapping[str, torch.Tensor], keys: Iterable[str]) -> State:
    """The sub-state with the given keys."""
    keys = list(keys)
    return {k: state[k] for k in keys}


def filter_keys(state: Mapping[str, torch.Tensor], predicate: Callable[[str], bool]) -> State:
    """The sub-state whose keys satisfy ``predicate``."""
    return {k: v for k, v in state.items() if predicate(k)}


def is_bn_key(key: str) -> bool:
    """True for normalization-layer entries (FedBN's rule: a module named bn*/norm*, weights and buffers)."""
    return bool(BN_PATTERN.search(key))


def bn_keys(state: Mapping[str, torch.Tensor]) -> list[str]:
    """Keys of normalization-layer entries."""
    return [k for k in state if is_bn_key(k)]


def prefix_keys(state: Mapping[str, torch.Tensor], prefixes: Iterable[str]) -> list[str]:
    """Keys that start with any of ``prefixes`` (e.g. the head's module names)."""
    prefixes = tuple(prefixes)
    return [k for k in state if k.startswith(prefixes)]


def update(base: Mapping[str, torch.Tensor], part: Mapping[str, torch.Tensor]) -> State:
    """A copy of ``base`` with the entries of ``part`` written over it."""
    unknown = set(part) - set(base)
    if unknown:
        raise KeyError(f"unknown keys {sorted(unknown)[:5]}")
    out = dict(base)
    out.update({k: v.detach().clone() for k, v in part.items()})
    return out


def flatten(state: Mapping[str, torch.Tensor], keys: Iterable[str] | None = None) -> torch.Tensor:
    """Concatenate the floating entries (or ``keys``) into one vector."""
    keys = [k for k in state if is_float(state[k])] if keys is None else list(keys)
    return torch.cat([state[k].reshape(-1) for k in keys])


def unflatten(vec: torch.Tensor, like: Mapping[str, torch.Tensor], keys: Iterable[str] | None = None) -> State:
    """Inverse of :func:`flatten`: split ``vec`` into the shapes of ``like`` (other keys copied)."""
    keys = [k for k in like if is_float(like[k])] if keys is None else list(keys)
    need = sum(like[k].numel() for k in keys)
    if vec.numel() != need:
        raise ValueError(f"vector has {vec.numel()} entries, states need {need}")
    out = {k: v.clone() for k, v in like.items()}
    i = 0
    for k in keys:
        n = like[k].numel()
        out[k] = vec[i : i + n].reshape(like[k].shape).to(like[k].dtype).clone()
        i += n
    return out


def norm(state: Mapping[str, torch.Tensor], keys: Iterable[str] | None = None) -> float:
    """Euclidean norm over floating entries (or ``keys``)."""
    return float(flatten(state, keys).double().norm())


def distance(a: Mapping[str, torch.Tensor], b: Mapping[str, torch.Tensor], keys: Iterable[str] | None = None) -> float:
    """‖a − b‖ over floating entries (or ``keys``)."""
    return norm(sub(a, b), keys)


def equal(a: Mapping[str, torch.Tensor], b: Mapping[str, torch.Tensor], keys: Iterable[str] | None = None) -> bool:
    """True when the two states hold identical tensors on ``keys`` (default: all keys of a)."""
    keys = list(a) if keys is None else list(keys)
    return all(torch.equal(a[k], b[k]) for k in keys)


def to(state: Mapping[str, torch.Tensor], device: torch.device | str) -> State:
    """The state on ``device``."""
    return {k: v.to(device) for k, v in state.items()}
