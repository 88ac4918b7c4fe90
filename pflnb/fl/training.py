"""The one local-training loop and the one evaluation routine every algorithm uses."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from pflnb.data import Split
from pflnb.fields import check_fields, choice, flag, integer, real

OPTIMIZERS = ("sgd", "adam")


@dataclass(frozen=True)
class OptimConfig:
    """Local optimizer settings: learning rate (decayed by ``lr_decay`` per round: η_t = η·decay^(t−1)),
    batch size, local epochs, momentum, weight decay, optimizer (sgd or adam; a fresh optimizer each round)."""

    lr: float = real(0.05, 0.0, low_open=True)
    batch_size: int = integer(32, 1)
    local_epochs: int = integer(1, 1)
    drop_last: bool = flag(False, "drop each epoch's trailing partial minibatch (LG-Mix's official code does)")
    momentum: float = real(0.0, 0.0, 1.0, high_open=True)
    weight_decay: float = real(0.0, 0.0)
    optimizer: str = choice("sgd", OPTIMIZERS)
    lr_decay: float = real(1.0, 0.0, 1.0, low_open=True)

    def validate(self) -> None:
        """Raise ValueError naming the first field out of its declared range."""
        check_fields(self)

    def at_round(self, t: int) -> OptimConfig:
        """The settings in round t (1-based): the learning rate decayed t − 1 times."""
        if self.lr_decay == 1.0:
            return self
        return dataclasses.replace(self, lr=self.lr * self.lr_decay ** (t - 1))


def batch_indices(
    n: int, batch_size: int, generator: torch.Generator, shuffle: bool = True, drop_last: bool = False
) -> Iterator[torch.Tensor]:
    """Index batches of one epoch over n samples; a trailing batch of one sample is always dropped
    (BatchNorm cannot train on it) unless it is the only batch."""
    dev = generator.device  # indices live with their generator (the CPU); epoch_batches moves them to the data
    order = torch.randperm(n, generator=generator, device=dev) if shuffle else torch.arange(n, device=dev)
    for start in range(0, n, batch_size):
        idx = order[start : start + batch_size]
        if len(idx) < batch_size and (drop_last or (len(idx) == 1 and start > 0)):
            return
        yield idx


def batches_per_epoch(n: int, batch_size: int, drop_last: bool = False) -> int:
    """Number of minibatches :func:`batch_indices` yields in one epoch over n samples."""
    full, rest = divmod(n, batch_size)
    if rest and not drop_last and not (rest == 1 and full > 0):
        full += 1
    return full


def epoch_batches(
    split: Split, batch_size: int, generator: torch.Generator, drop_last: bool = False
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Shuffled (x, y) minibatches of one epoch over ``split``."""
    for idx in batch_indices(len(split), batch_size, generator, True, drop_last):
        idx = idx.to(split.y.device)
        yield split.x[idx], split.y[idx]


def step_groups(batches: list, k: int) -> list[list]:
    """The steps of one epoch when a step takes ``k`` consecutive minibatches: a trailing incomplete group is dropped,
    unless it is the only one, when its last minibatch is repeated (Per-FedAvg's pairs (D, D'))."""
    if k == 1:
        return [[b] for b in batches]
    if 0 < len(batches) < k:
        return [batches + [batches[-1]] * (k - len(batches))]
    return [batches[i : i + k] for i in range(0, len(batches) - k + 1, k)]


def make_optimizer(params: Iterable[nn.Parameter], opt: OptimConfig) -> torch.optim.Optimizer:
    """The configured optimizer (SGD with momentum and weight decay, or Adam, at ``opt.lr``) over ``params``."""
    if opt.optimizer == "sgd":
        return torch.optim.SGD(list(params), lr=opt.lr, momentum=opt.momentum, weight_decay=opt.weight_decay)
    if opt.optimizer == "adam":
        return torch.optim.Adam(list(params), lr=opt.lr, weight_decay=opt.weight_decay)
    raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {opt.optimizer!r}")


LossFn = Callable[[nn.Module, torch.Tensor, torch.Tensor], torch.Tensor]
StepHook = Callable[[nn.Module, torch.Tensor, torch.Tensor], None]


def cross_entropy_loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of the model's logits."""
    return F.cross_entropy(model(x), y)


def accumulator_dtype(device: torch.device) -> torch.dtype:
    """The dtype losses are summed in on ``device``: float64 (exactly a Python float sum), float32 where float64 is missing."""
    return torch.float32 if device.type == "mps" else torch.float64


def train_epochs(
    model: nn.Module,
    split: Split,
    opt: OptimConfig,
    generator: torch.Generator,
    epochs: int | None = None,
    params: Iterable[nn.Parameter] | None = None,
    loss_fn: LossFn = cross_entropy_loss,
    regularizer: Callable[[nn.Module], torch.Tensor] | None = None,
    max_steps: int | None = None,
    after_step: StepHook | None = None,
    optimizer: torch.optim.Optimizer | None = None,
    backward: bool = True,
    per_step: int = 1,
    per_epoch: int | None = None,
) -> dict[str, float]:
    """Train ``model`` in place with SGD on ``split`` for ``epochs`` (default ``opt.local_epochs``).

    ``params`` restricts the trained parameters (others get no update, though BN running statistics of
    the whole model still move in train mode); ``regularizer(model)`` is added to the loss (FedProx,
    Ditto); ``max_steps`` caps the number of SGD steps; ``after_step(model, x, y)`` runs after every
    optimizer step (a proximal step, a second model's update on the same minibatch); ``optimizer`` continues
    an existing optimizer (its state carries over) instead of a fresh one; ``backward=False`` takes no optimizer step
    (``loss_fn`` makes the step itself and returns the loss to report); ``per_step > 1`` hands ``loss_fn`` tuples of
    that many minibatches (:func:`step_groups`); ``per_epoch`` caps the steps of an epoch. Losses are summed on the device
    and read once at the end. Returns the mean loss and the number of steps.
    """
    epochs = opt.local_epochs if epochs is None else epochs
    if optimizer is None and backward:
        trainable = list(model.parameters()) if params is None else list(params)
        optimizer = make_optimizer(trainable, opt)
    model.train()
    total, steps = None, 0
    for _ in range(epochs):
        for x, y in _epoch_steps(split, opt, generator, per_step, per_epoch):
            loss = loss_fn(model, x, y)
            if regularizer is not None:
                loss = loss + regularizer(model)
            if backward:
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
            if after_step is not None:
                after_step(model, x, y)
            value = loss.detach().to(accumulator_dtype(loss.device))
            total = value if total is None else total + value
            steps += 1
            if max_steps is not None and steps >= max_steps:
                return {"loss": float(total) / steps, "steps": steps}
    return {"loss": float(total) / steps if steps else 0.0, "steps": steps}


def _epoch_steps(split: Split, opt: OptimConfig, generator: torch.Generator, per_step: int, per_epoch: int | None):
    """The (x, y) of each step of one epoch: minibatches, or tuples of ``per_step`` of them; at most ``per_epoch``."""
    batches = epoch_batches(split, opt.batch_size, generator, opt.drop_last)
    if per_step > 1:
        groups = step_groups(list(batches), per_step)
        batches = ((tuple(x for x, _ in g), tuple(y for _, y in g)) for g in groups)
    for i, xy in enumerate(batches):
        if per_epoch is not None and i >= per_epoch:
            return
        yield xy


@torch.no_grad()
def evaluate(model: nn.Module, split: Split, batch_size: int = 1024) -> dict[str, float]:
    """Accuracy and mean cross-entropy of ``model`` (eval mode) on ``split``."""
    model.eval()
    correct, loss, n = 0, 0.0, len(split)
    if n == 0:
        return {"acc": float("nan"), "loss": float("nan")}
    for start in range(0, n, batch_size):
        x, y = split.x[start : start + batch_size], split.y[start : start + batch_size]
        logits = model(x)
        loss += float(F.cross_entropy(logits, y, reduction="sum"))
        correct += int((logits.argmax(1) == y).sum())
    return {"acc": correct / n, "loss": loss / n}
